"""SGLang adapter: greatgramma as an SGLang grammar backend, selected with ``--grammar-backend greatgramma``.

SGLang (tested with 0.5.23) loads the entry points of the group ``sglang.srt.plugins`` in every
one of its processes (``load_plugins()``: the launcher before it parses the server arguments,
the scheduler process before it builds its grammar backend). greatgramma's ``pyproject.toml``
declares :func:`register` there, so installing greatgramma next to SGLang is enough: it adds
``greatgramma`` to the choices of ``--grammar-backend`` and to SGLang's backend registry
(``register_grammar_backend``). A server started with ``SGLANG_PLUGINS`` set loads only the
plugins it names, so that list must include ``greatgramma``.

Request kinds: ``json_schema`` (and ``response_format`` ``json_object``), ``regex`` (Python
syntax, a full match), ``ebnf`` as a **Lark** grammar (``start: ...``; GBNF ``root ::= ...`` is
refused with a message saying so), ``structural_tag`` refused. Each is compiled once per
(kind, text) by SGLang's own cache and by :class:`~greatgramma.serving.GrammarCache`. With a
``--reasoning-parser`` the backend is wrapped in SGLang's ``ReasonerGrammarBackend``, which
applies the grammar only after the end-of-thinking tokens, as SGLang does for its own backends
(a registered backend is returned as it is by ``create_grammar_backend``, so :func:`create_backend`
does the wrapping itself).

This module imports SGLang; ``import greatgramma`` never imports it.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
from collections.abc import Callable
from typing import Any

import torch
from sglang.srt.constrained.base_grammar_backend import (
    BaseGrammarBackend,
    BaseGrammarObject,
    GrammarRow,
    GrammarStats,
    InvalidGrammarObject,
    register_grammar_backend,
)
from sglang.srt.constrained.torch_ops.token_filter_torch_ops import set_token_filter_torch

from ..compiled import CompiledGrammar
from ..errors import GreatGrammaError
from ..grammar import Grammar
from ..kernels.layout import get_bitmask_shape
from ..kernels.torch import apply_token_bitmask_inplace
from ..matcher import Matcher, fill_next_token_bitmasks
from ..serving import GrammarCache, MaskWorkers
from ..vocab import Vocabulary

__all__ = ["BACKEND_NAME", "GreatgrammaGrammar", "GreatgrammaGrammarBackend", "create_backend", "register"]

logger = logging.getLogger(__name__)

BACKEND_NAME = "greatgramma"
MAX_ROLLBACK_TOKENS = 200  # as SGLang's xgrammar backend: speculative decoding rolls back a few tokens
ANY_JSON = "$$ANY$$"  # SGLang's key for "any JSON value" (xgrammar's builtin JSON grammar)
_GBNF_RULE = re.compile(r"^\s*[A-Za-z_][\w-]*\s*::=", re.MULTILINE)

Whitespace = str | int  # Grammar.from_json_schema's whitespace: "json", "compact" or a bound per run


# ---------------------------------------------------------------- masks: int32 words, bit t & 31 of word t >> 5 (as xgrammar)


def allocate_vocab_mask(vocab_size: int, batch_size: int, device: Any = None) -> torch.Tensor:
    """A CPU mask with every token allowed (rows SGLang does not fill stay unconstrained), pinned
    when CUDA is there so that :func:`move_vocab_mask` is an asynchronous copy."""
    shape = get_bitmask_shape(batch_size, vocab_size)
    return torch.full(shape, -1, dtype=torch.int32, pin_memory=torch.cuda.is_available())


def reset_vocab_mask(vocab_mask: torch.Tensor) -> None:
    vocab_mask.fill_(-1)


def move_vocab_mask(vocab_mask: torch.Tensor, device: Any) -> torch.Tensor:
    return vocab_mask.to(device, non_blocking=True)


def apply_vocab_mask(logits: torch.Tensor, vocab_mask: torch.Tensor) -> None:
    """Disallowed logits to -inf (greatgramma's kernel: Triton on CUDA when available, else torch)."""
    apply_token_bitmask_inplace(logits, vocab_mask)


class GreatgrammaGrammar(BaseGrammarObject):
    """One request's grammar state in SGLang's grammar-object API, over a :class:`~greatgramma.Matcher`.

    ``accept_token`` raises ValueError for a token the grammar refuses (SGLang aborts that request
    and names the error) and ignores tokens after EOS was accepted, as SGLang's xgrammar object
    does. ``copy()`` is a fresh matcher on the same compiled grammar (SGLang's cache hands one to
    each request); matchers of one compiled grammar share its mask caches. ``workers``: the
    backend's :class:`~greatgramma.serving.MaskWorkers`, which ``fill_vocab_mask_batched`` uses.
    """

    def __init__(
        self, compiled: CompiledGrammar, key: tuple[str, str], stats: GrammarStats | None = None,
        workers: MaskWorkers | None = None,
    ) -> None:  # fmt: skip
        super().__init__()
        self.compiled = compiled
        self.key = key
        self.matcher = Matcher(compiled, max_rollback_tokens=MAX_ROLLBACK_TOKENS)
        self.grammar_stats = stats
        self.workers = workers

    # ------------------------------------------------------------ decoding

    def accept_token(self, token: int) -> None:
        if self.matcher.is_terminated():
            return
        self.current_token = token
        if not self.matcher.accept_token(token):
            expected = ", ".join(self.matcher.expected()) or "EOS"
            raise ValueError(
                f"greatgramma: token {token} is not allowed by the {self.key[0]} grammar here "
                f"(expected: {expected}); key: {self.key[1][:200]!r}"
            )

    def rollback(self, k: int) -> None:
        self.matcher.rollback(k)

    def is_terminated(self) -> bool:
        return self.matcher.is_terminated()

    def copy(self) -> GreatgrammaGrammar:
        stats = self.grammar_stats
        if stats is not None:
            stats = dataclasses.replace(stats, is_cache_hit=True, tree_traversal_time=[])
        return GreatgrammaGrammar(self.compiled, self.key, stats, self.workers)

    # ------------------------------------------------------------ masks

    allocate_vocab_mask = staticmethod(allocate_vocab_mask)

    def fill_vocab_mask(self, vocab_mask: torch.Tensor, idx: int) -> None:
        self.matcher.fill_next_token_bitmask(vocab_mask, idx)

    @staticmethod
    def fill_vocab_mask_batched(entries: list[GrammarRow], vocab_mask: torch.Tensor) -> None:
        """Fill the listed rows (ours in one batched write, through the backend's mask workers if it
        has them; other grammar objects row by row)."""
        ours: list[Matcher | None] = [None] * vocab_mask.shape[0]
        workers = None
        for row, grammar in entries:
            if isinstance(grammar, GreatgrammaGrammar):
                ours[row] = grammar.matcher
                workers = workers or grammar.workers
            else:
                grammar.fill_vocab_mask(vocab_mask, row)
        fill_next_token_bitmasks(ours, vocab_mask, workers=workers)

    reset_vocab_mask = staticmethod(reset_vocab_mask)
    move_vocab_mask = staticmethod(move_vocab_mask)
    apply_vocab_mask = staticmethod(apply_vocab_mask)

    # ------------------------------------------------------------ jump-forward (SGLang's string form)

    def try_jump_forward(self, tokenizer: Any) -> tuple[list[int], str] | None:
        """``([], text)`` where ``text`` is what every continuation begins with, or None.

        The forced bytes (:meth:`Matcher.find_jump_forward_bytes`) are cut back to whole UTF-8
        characters, since SGLang appends text and retokenizes it. SGLang 0.5.23 declares these
        three methods but its scheduler no longer calls them.
        """
        text = _utf8_prefix(self.matcher.find_jump_forward_bytes())
        return ([], text) if text else None

    def jump_forward_str_state(self, helper: tuple[list[int], str]) -> tuple[str, int]:
        return helper[1], -1

    def jump_and_retokenize(self, old_output_ids: list[int], new_output_ids: list[int], next_state: int) -> None:
        """Roll back to the longest common prefix of the two tokenizations, then accept the new tokens."""
        same = 0
        for old, new in zip(old_output_ids, new_output_ids):
            if old != new:
                break
            same += 1
        self.matcher.rollback(len(old_output_ids) - same)
        for tok in new_output_ids[same:]:
            self.accept_token(tok)

    def __repr__(self) -> str:
        return f"GreatgrammaGrammar(kind={self.key[0]!r}, {self.matcher!r})"


class GreatgrammaGrammarBackend(BaseGrammarBackend):
    """SGLang's grammar backend API over greatgramma: compiles each request kind to a :class:`GreatgrammaGrammar`.

    ``tokenizer``: a transformers fast tokenizer (or a ``tokenizers.Tokenizer`` with
    ``eos_token_ids``); ``vocab_size``: the model's logits width, which may exceed the tokenizer's
    (the ids past it are never allowed); ``eos_token_ids``: the model's EOS ids (default: the
    tokenizer's ``eos_token_id``). ``whitespace`` is passed to
    :meth:`Grammar.from_json_schema`. ``compile_workers``, ``cache_dir`` and
    ``compile_timeout`` configure the :class:`~greatgramma.serving.GrammarCache` that compiles
    (worker processes keep a compile from holding the scheduler's GIL; a directory keeps
    artifacts across restarts). ``mask_workers > 0`` fills each batch's masks with that many
    worker processes beside the scheduler (:class:`~greatgramma.serving.MaskWorkers`; SGLang
    asks for a batch's masks at once). A grammar that does not compile becomes SGLang's
    ``InvalidGrammarObject`` with greatgramma's message, so the request is aborted with it.
    """

    def __init__(
        self,
        tokenizer: Any,
        vocab_size: int,
        eos_token_ids: Any = None,
        *,
        whitespace: Whitespace = "json",
        compile_workers: int = 0,
        cache_dir: str | os.PathLike | None = None,
        compile_timeout: float | None = None,
        mask_workers: int = 0,
    ) -> None:
        super().__init__()
        eos = sorted(eos_token_ids) if eos_token_ids else None
        self.vocab = Vocabulary.from_tokenizer(tokenizer, vocab_size=vocab_size, eos_token_ids=eos)
        self.vocab_size = vocab_size
        self.whitespace = whitespace
        self.grammar_cache = GrammarCache(
            self.vocab, workers=compile_workers, directory=cache_dir, compile_timeout=compile_timeout
        )
        self.mask_workers = MaskWorkers(mask_workers) if mask_workers > 0 else None

    def dispatch_json(self, key_string: str) -> BaseGrammarObject:
        if key_string == ANY_JSON:
            return self._compile("json", key_string, lambda: Grammar.any_json(whitespace=self.whitespace, object_only=False))
        return self._compile(
            "json", key_string, lambda: Grammar.from_json_schema(json.loads(key_string), whitespace=self.whitespace)
        )

    def dispatch_regex(self, key_string: str) -> BaseGrammarObject:
        return self._compile("regex", key_string, lambda: Grammar.from_regex(key_string))

    def dispatch_ebnf(self, key_string: str) -> BaseGrammarObject:
        """An ``ebnf`` request holds a Lark grammar (start rule ``start``); GBNF is refused, saying so."""
        if _GBNF_RULE.search(key_string):
            return _refuse(
                "greatgramma reads Lark grammars (`start: item+`, `ITEM: /[a-z]+/`), not GBNF/xgrammar EBNF "
                "(`root ::= ...`): rewrite the grammar in Lark syntax, or use --grammar-backend xgrammar"
            )
        return self._compile("ebnf", key_string, lambda: Grammar(key_string))

    def dispatch_structural_tag(self, key_string: str) -> BaseGrammarObject:
        return _refuse(
            "greatgramma does not support structural_tag requests (tool-call tags with triggers); "
            "use json_schema, regex or a Lark grammar in ebnf, or --grammar-backend xgrammar/llguidance"
        )

    @property
    def is_support_token_filter(self) -> bool:
        return True

    @staticmethod
    def set_token_filter(
        vocab_mask: torch.Tensor, token_ids: list[int], batch_idx: int, is_allowed: bool = True, reset_vocab_mask: bool = True
    ) -> None:
        """Allow (or forbid) ``token_ids`` in one row (SGLang's strict thinking uses it while the model reasons)."""
        set_token_filter_torch(vocab_mask, token_ids, batch_idx, is_allowed=is_allowed, reset_vocab_mask=reset_vocab_mask)

    def reset(self) -> None:
        """SGLang's cache flush: forget the compiled grammars too."""
        super().reset()
        self.grammar_cache.clear()

    allocate_vocab_mask = staticmethod(allocate_vocab_mask)
    move_vocab_mask = staticmethod(move_vocab_mask)
    apply_vocab_mask = staticmethod(apply_vocab_mask)

    def _compile(self, kind: str, key_string: str, make: Callable[[], Grammar]) -> BaseGrammarObject:
        try:
            compiled = self.grammar_cache.get(make())
        except (GreatGrammaError, ValueError, RecursionError) as exc:  # ValueError: the schema is not JSON
            logger.warning("greatgramma could not compile a %s grammar: %s", kind, exc)
            return InvalidGrammarObject(f"greatgramma: {exc}")
        return GreatgrammaGrammar(compiled, (kind, key_string), GrammarStats(dispatch_type=kind), self.mask_workers)


def _refuse(message: str) -> InvalidGrammarObject:
    logger.warning(message)
    return InvalidGrammarObject(message)


def _utf8_prefix(data: bytes) -> str:
    """The longest prefix of ``data`` that is whole UTF-8 characters (forced bytes may end inside one)."""
    for cut in range(len(data), max(len(data) - 4, 0) - 1, -1):
        try:
            return data[:cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return ""


# ---------------------------------------------------------------- selection by SGLang


def create_backend(server_args: Any, tokenizer: Any, vocab_size: int, eos_token_ids: Any = None) -> BaseGrammarBackend:
    """The factory SGLang's ``create_grammar_backend`` calls for ``--grammar-backend greatgramma``.

    Reads SGLang's JSON whitespace options (``--constrained-json-disable-any-whitespace``:
    none; ``--constrained-json-max-whitespace-cnt N``: runs of at most N) and, for the compile
    cache, the environment variables ``GREATGRAMMA_COMPILE_WORKERS`` (worker processes, default 0)
    and ``GREATGRAMMA_CACHE_DIR`` (artifact directory), and ``GREATGRAMMA_MASK_WORKERS`` (worker
    processes that fill a batch's masks beside the scheduler, default 0). With ``--reasoning-parser``, the backend
    is wrapped in SGLang's ``ReasonerGrammarBackend`` exactly when SGLang would wrap its own.
    """
    from sglang.srt.runtime_context import get_serving

    serving = get_serving()
    if serving.constrained_json_whitespace_pattern:
        logger.warning("greatgramma ignores --constrained-json-whitespace-pattern (it takes the whitespace options)")
    whitespace: Whitespace = "json"
    if serving.constrained_json_disable_any_whitespace:
        whitespace = "compact"
    elif serving.constrained_json_max_whitespace_cnt is not None:
        whitespace = int(serving.constrained_json_max_whitespace_cnt)
    backend = GreatgrammaGrammarBackend(
        tokenizer,
        vocab_size,
        eos_token_ids,
        whitespace=whitespace,
        compile_workers=int(os.environ.get("GREATGRAMMA_COMPILE_WORKERS", "0")),
        cache_dir=os.environ.get("GREATGRAMMA_CACHE_DIR") or None,
        mask_workers=int(os.environ.get("GREATGRAMMA_MASK_WORKERS", "0")),
    )
    return _with_reasoner(backend, tokenizer, serving)


def _with_reasoner(backend: BaseGrammarBackend, tokenizer: Any, serving: Any) -> BaseGrammarBackend:
    """Wrap as SGLang wraps its built-in backends: when a reasoning parser is set and its
    end-of-thinking text encodes to tokens, the grammar starts after those tokens."""
    if not serving.reasoning_parser:
        return backend
    from sglang.srt.constrained.reasoner_grammar_backend import ReasonerGrammarBackend
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    parser = ReasoningParser(model_type=serving.reasoning_parser, stream_reasoning=False, tokenizer=tokenizer)
    if not parser.detector.get_think_end_token_ids(tokenizer):
        return backend
    return ReasonerGrammarBackend(backend, parser, tokenizer, enable_strict_thinking=serving.enable_strict_thinking)


def register() -> None:
    """SGLang plugin entry point (group ``sglang.srt.plugins``): make ``--grammar-backend greatgramma``
    a valid choice and register :func:`create_backend` under that name. Idempotent."""
    from sglang.srt.server_args import GRAMMAR_BACKEND_CHOICES, add_grammar_backend_choices

    if BACKEND_NAME not in GRAMMAR_BACKEND_CHOICES:
        add_grammar_backend_choices([BACKEND_NAME])
    register_grammar_backend(BACKEND_NAME, create_backend)
