"""transformers adapter: GrammarLogitsProcessor constrains ``model.generate`` to a compiled grammar."""

from __future__ import annotations

import numpy as np
import torch
from transformers import LogitsProcessor

from ..bitmask import get_bitmask_shape
from ..compiled import CompiledGrammar
from ..errors import GreatGrammaError
from ..kernels.torch import apply_token_bitmask_inplace
from ..matcher import Matcher, fill_next_token_bitmasks

__all__ = ["GrammarLogitsProcessor"]


class GrammarLogitsProcessor(LogitsProcessor):
    """Masks each step's logits so that every row of ``model.generate`` stays inside the grammar.

    Use it as ``model.generate(..., logits_processor=LogitsProcessorList([proc]))`` with greedy
    search or sampling (any batch size, ``num_return_sequences`` included; beam search reorders
    rows and is not supported). One Matcher per row follows the output: the prompt length is
    learned at the first call, and each later call feeds the row's newly generated token(s).
    A row whose output accepted EOS gets only EOS (and ``pad_token_id``) allowed from then on.

    A processor follows one generation at a time: call ``reset()`` (or make a new one) before
    reusing it; a call with a batch of another size or a sequence no longer than the last one
    is taken as the start of a new generation.
    """

    def __init__(
        self,
        compiled: CompiledGrammar,
        batch_size: int | None = None,
        *,
        pad_token_id: int | None = None,
        max_workers: int | None = None,
    ) -> None:
        self.compiled = compiled
        self.batch_size = batch_size
        self.pad_token_id = pad_token_id
        self.max_workers = max_workers
        self.matchers: list[Matcher] = []
        self._prompt_len: int | None = None
        self._consumed = 0
        self._stopped: list[bool] = []  # rows that transformers ended on its own (padding them)
        self._bitmask: np.ndarray | None = None

    def reset(self) -> None:
        """Forget the current generation; the next call starts a new one."""
        self.matchers = []
        self._prompt_len = None
        self._consumed = 0
        self._stopped = []

    def __call__(self, input_ids: torch.LongTensor, scores: torch.Tensor) -> torch.Tensor:
        batch, length = input_ids.shape
        new = 0 if self._prompt_len is None else length - self._prompt_len - self._consumed
        if self._prompt_len is None or batch != len(self.matchers) or new <= 0:
            self._start(batch, length)
        else:
            self._feed(input_ids[:, length - new :].tolist())
            self._consumed += new
        self._mask(scores)
        return scores

    # ------------------------------------------------------------ internals

    def _start(self, batch: int, length: int) -> None:
        if self.batch_size is not None and batch != self.batch_size:
            raise ValueError(f"GrammarLogitsProcessor was built for batch_size={self.batch_size}, got {batch} rows")
        first = Matcher(self.compiled)
        self.matchers = [first] + [Matcher(first.masker) for _ in range(batch - 1)]
        self._stopped = [False] * batch
        self._prompt_len = length
        self._consumed = 0

    def _feed(self, new_tokens: list[list[int]]) -> None:
        for i, (m, toks) in enumerate(zip(self.matchers, new_tokens)):
            for tok in toks:
                if self._stopped[i] or m.is_terminated():
                    break  # transformers pads finished rows
                if m.accept_token(tok):
                    continue
                if self.pad_token_id is not None and tok == self.pad_token_id:
                    self._stopped[i] = True  # ended by another stopping criterion
                    break
                raise GreatGrammaError(
                    f"row {i}: generated token {tok} is not allowed by the grammar (expected one of: "
                    f"{', '.join(m.expected()) or 'nothing'}); was the processor reused without reset(), "
                    "or combined with beam search?"
                )

    def _mask(self, scores: torch.Tensor) -> None:
        shape = get_bitmask_shape(len(self.matchers), self.compiled.vocab.vocab_size)
        if self._bitmask is None or self._bitmask.shape != shape:
            self._bitmask = np.zeros(shape, dtype=np.int32)
        bitmask = self._bitmask
        fill_next_token_bitmasks(self.matchers, bitmask, max_workers=self.max_workers)
        ending = list(self.matchers[0].eos_token_ids) if self.matchers else []
        if self.pad_token_id is not None:
            ending.append(self.pad_token_id)
        for i, m in enumerate(self.matchers):
            if self._stopped[i] or m.is_terminated():
                bitmask[i] = 0
                for tok in ending:
                    _set_bit(bitmask[i], tok)
        apply_token_bitmask_inplace(scores, torch.from_numpy(bitmask))


def _set_bit(words: np.ndarray, token: int) -> None:
    """Allow ``token`` in one bitmask row (ignored when it lies past the row)."""
    if 0 <= token < 32 * len(words):
        bit = 1 << (token & 31)
        words[token >> 5] |= bit - (1 << 32) if bit >= 1 << 31 else bit
