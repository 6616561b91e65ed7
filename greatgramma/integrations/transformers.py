"""transformers adapter: GrammarLogitsProcessor constrains ``model.generate`` to a compiled grammar."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import torch
from transformers import LogitsProcessor, StoppingCriteria

from ..bitmask import get_bitmask_shape
from ..compiled import CompiledGrammar
from ..errors import GreatGrammaError
from ..kernels.torch import apply_token_bitmask_inplace
from ..matcher import Matcher, fill_next_token_bitmasks
from ..serving.mask_workers import MaskWorkers

__all__ = ["GrammarLogitsProcessor", "MaskPrefetcher"]


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

    To compute each step's masks while the model's forward pass runs, also pass
    ``stopping_criteria=StoppingCriteriaList([proc.prefetcher()])``: ``generate`` calls stopping
    criteria right after a token is sampled and before the next forward pass, which is all the
    mask for the next step depends on; the prefetcher feeds the token and starts the masks on a
    background thread, and the processor waits for them (torch releases the GIL in the forward).

    ``workers``: a :class:`~greatgramma.serving.MaskWorkers` whose processes compute a share of
    each step's rows (worth it for large batches of grammars whose masks are not all cached).
    """

    def __init__(
        self,
        compiled: CompiledGrammar,
        batch_size: int | None = None,
        *,
        pad_token_id: int | None = None,
        workers: MaskWorkers | None = None,
    ) -> None:
        self.compiled = compiled
        self.batch_size = batch_size
        self.pad_token_id = pad_token_id
        self.workers = workers
        self.matchers: list[Matcher] = []
        self._prompt_len: int | None = None
        self._consumed = 0
        self._stopped: list[bool] = []  # rows that transformers ended on its own (padding them)
        self._ahead: tuple[int, Future] | None = None  # (sequence length, masks being computed for it)
        self._pool: ThreadPoolExecutor | None = None

    def reset(self) -> None:
        """Forget the current generation; the next call starts a new one."""
        self.matchers = []
        self._prompt_len = None
        self._consumed = 0
        self._stopped = []
        self._ahead = None

    def prefetcher(self) -> MaskPrefetcher:
        """A stopping criterion (it never stops) that starts the next step's masks early; see the class docstring."""
        return MaskPrefetcher(self)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.Tensor) -> torch.Tensor:
        batch, length = input_ids.shape
        ahead, self._ahead = self._ahead, None
        if ahead is not None and ahead[0] == length and batch == len(self.matchers):
            bitmask = ahead[1].result()  # fed and computed while the forward pass ran
        else:
            if not self._take_new_tokens(input_ids):
                self._start(batch, length)
            bitmask = self._fill(np.zeros(get_bitmask_shape(batch, self.compiled.vocab.vocab_size), dtype=np.int32))
        apply_token_bitmask_inplace(scores, torch.from_numpy(bitmask))
        return scores

    def prefetch(self, input_ids: torch.LongTensor) -> None:
        """Feed the tokens sampled since the last call and start computing the next masks."""
        if self._prompt_len is None or not self._take_new_tokens(input_ids):
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gg-masks")
        shape = get_bitmask_shape(len(self.matchers), self.compiled.vocab.vocab_size)
        self._ahead = (input_ids.shape[1], self._pool.submit(self._fill, np.zeros(shape, dtype=np.int32)))

    # ------------------------------------------------------------ internals

    def _take_new_tokens(self, input_ids: torch.LongTensor) -> bool:
        """Feed the rows' new tokens; False when the call starts a new generation instead."""
        batch, length = input_ids.shape
        new = 0 if self._prompt_len is None else length - self._prompt_len - self._consumed
        if self._prompt_len is None or batch != len(self.matchers) or new <= 0:
            return False
        self._feed(input_ids[:, length - new :].tolist())
        self._consumed += new
        return True

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

    def _fill(self, bitmask: np.ndarray) -> np.ndarray:
        """Every row's next-token mask; rows that ended allow only EOS (and ``pad_token_id``)."""
        fill_next_token_bitmasks(self.matchers, bitmask, workers=self.workers)
        ending = list(self.matchers[0].eos_token_ids) if self.matchers else []
        if self.pad_token_id is not None:
            ending.append(self.pad_token_id)
        for i, m in enumerate(self.matchers):
            if self._stopped[i] or m.is_terminated():
                bitmask[i] = 0
                for tok in ending:
                    _set_bit(bitmask[i], tok)
        return bitmask


class MaskPrefetcher(StoppingCriteria):
    """A stopping criterion that never stops: it hands each newly sampled token to its
    :class:`GrammarLogitsProcessor` before the next forward pass (``GrammarLogitsProcessor.prefetcher``)."""

    def __init__(self, processor: GrammarLogitsProcessor) -> None:
        self.processor = processor

    def __call__(self, input_ids: torch.LongTensor, scores: torch.Tensor, **kwargs: object) -> torch.BoolTensor:
        self.processor.prefetch(input_ids)
        return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)


def _set_bit(words: np.ndarray, token: int) -> None:
    """Allow ``token`` in one bitmask row (ignored when it lies past the row)."""
    if 0 <= token < 32 * len(words):
        bit = 1 << (token & 31)
        words[token >> 5] |= bit - (1 << 32) if bit >= 1 << 31 else bit
