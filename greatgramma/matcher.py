"""Matcher: the stateful per-sequence shell over Masker that serving engines expect (xgrammar/llguidance habits)."""

from __future__ import annotations

import operator
from collections import deque
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .cache import per_object
from .compiled import CompiledGrammar
from .errors import GreatGrammaError, TokenRejectedError
from .jump_forward import MAX_FORCED_BYTES, MAX_WITHHELD_TOKENS, Tokenize, ff_tokens, forced_bytes
from .masker import Masker, State

if TYPE_CHECKING:
    from .serving.mask_workers import MaskWorkers

__all__ = ["Matcher", "RollbackError", "fill_next_token_bitmasks"]


class RollbackError(GreatGrammaError, ValueError):
    """``rollback(n)`` asked to undo more tokens than the matcher remembers."""


_shared_masker = per_object(Masker)  # one Masker per compiled grammar: its matchers share the mask caches


class Matcher:
    """One sequence being decoded under a grammar: current state, history for rollback, bitmask filling.

    ``Matcher(compiled)`` (or ``Matcher(masker)`` to use a specific Masker). Matchers of the same
    compiled grammar share one Masker and its caches; a single Matcher is not meant to be used
    from several threads at once, but different Matchers may run in different threads.

    ``max_rollback_tokens`` bounds the history kept for ``rollback`` (None: unbounded).
    """

    def __init__(self, compiled: CompiledGrammar | Masker, *, max_rollback_tokens: int | None = None) -> None:
        if isinstance(compiled, Masker):
            self._masker = compiled
        elif isinstance(compiled, CompiledGrammar):
            self._masker = _shared_masker(compiled)
        else:
            raise TypeError(f"Matcher needs a CompiledGrammar or a Masker, got {type(compiled).__name__}")
        if max_rollback_tokens is not None and max_rollback_tokens < 0:
            raise ValueError(f"max_rollback_tokens must be >= 0 or None, got {max_rollback_tokens}")
        self.max_rollback_tokens = max_rollback_tokens
        vocab = self._masker.compiled.vocab
        self._vocab_size = vocab.vocab_size
        self._eos = np.array(sorted(set(vocab.eos_token_ids)), dtype=np.int64)
        maxlen = None if max_rollback_tokens is None else max_rollback_tokens + 1
        self._history: deque[State] = deque([self._masker.initial_state()], maxlen=maxlen)

    # ------------------------------------------------------------ properties

    @property
    def masker(self) -> Masker:
        return self._masker

    @property
    def compiled(self) -> CompiledGrammar:
        return self._masker.compiled

    @property
    def vocab_size(self) -> int:
        """The logits width the masks cover (the vocabulary's ``vocab_size``)."""
        return self._vocab_size

    @property
    def eos_token_ids(self) -> tuple[int, ...]:
        return tuple(int(t) for t in self._eos)

    @property
    def state(self) -> State:
        """The current immutable decoding state (usable with the Masker directly)."""
        return self._history[-1]

    @property
    def num_rollback_tokens(self) -> int:
        """How many accepted tokens ``rollback`` can still undo."""
        return len(self._history) - 1

    # ------------------------------------------------------------ decoding

    def accept_token(self, token: int) -> bool:
        """Advance by ``token`` if the grammar allows it; False (state unchanged) otherwise. Never raises
        for a disallowed token, including any token after termination."""
        nxt = self._try_advance(self.state, token)
        if nxt is None:
            return False
        self._history.append(nxt)
        return True

    def accept_tokens(self, tokens: Iterable[int]) -> int:
        """Accept ``tokens`` in order up to the first disallowed one; returns how many were accepted.

        The accepted prefix stays accepted (each is one step for ``rollback``); the rest is ignored.
        """
        n = 0
        for tok in tokens:
            if not self.accept_token(tok):
                break
            n += 1
        return n

    def validate_tokens(self, tokens: Iterable[int]) -> int:
        """How many leading tokens of ``tokens`` would be accepted in a row. Does not change the state."""
        state, n = self.state, 0
        for tok in tokens:
            nxt = self._try_advance(state, tok)
            if nxt is None:
                break
            state, n = nxt, n + 1
        return n

    def rollback(self, num_tokens: int = 1) -> None:
        """Undo the last ``num_tokens`` accepted tokens (an accepted EOS counts as one)."""
        if num_tokens < 0:
            raise ValueError(f"num_tokens must be >= 0, got {num_tokens}")
        if num_tokens > self.num_rollback_tokens:
            bound = "" if self.max_rollback_tokens is None else f" (max_rollback_tokens={self.max_rollback_tokens})"
            raise RollbackError(
                f"cannot roll back {num_tokens} tokens: only {self.num_rollback_tokens} are in the history{bound}"
            )
        for _ in range(num_tokens):
            self._history.pop()

    def reset(self) -> None:
        """Back to the initial state, with an empty history."""
        self._history.clear()
        self._history.append(self._masker.initial_state())

    def is_terminated(self) -> bool:
        """Whether an EOS token was accepted."""
        return self.state.finished

    def is_complete(self) -> bool:
        """Whether the output so far is a complete sentence (EOS would be accepted now)."""
        return self._masker.is_complete(self.state)

    def expected(self) -> list[str]:
        """Names of the terminals that may come next (for messages)."""
        return self._masker.expected(self.state)

    # ------------------------------------------------------------ jump-forward

    def find_jump_forward_bytes(self, max_bytes: int = MAX_FORCED_BYTES) -> bytes:
        """The bytes every valid continuation begins with (at most ``max_bytes``), stopping where EOS
        is allowed; b"" when there is a choice now. May end inside a UTF-8 character
        (:func:`~greatgramma.jump_forward.forced_bytes`). Does not change the state."""
        return forced_bytes(self._masker, self.state, max_bytes=max_bytes)

    def compute_ff_tokens(
        self, tokenize: Tokenize | None = None, *, max_tokens: int = MAX_WITHHELD_TOKENS, max_bytes: int = MAX_FORCED_BYTES
    ) -> list[int]:
        """Fast-forward tokens: a tokenization of the forced bytes, less the trailing tokens that an
        allowed longer token could replace (llguidance's rule,
        :func:`~greatgramma.jump_forward.ff_tokens`). Each is accepted in turn; the engine appends
        them with ``accept_tokens`` and runs them through the model like a short prefill. Does not
        change the state. ``tokenize``: bytes -> ids as the model's tokenizer spells them (default:
        longest match over the vocabulary; :func:`greatgramma.tokenize.bytes_tokenizer` wraps a
        Hugging Face tokenizer)."""
        state = self.state
        forced = forced_bytes(self._masker, state, max_bytes=max_bytes)
        return ff_tokens(self._masker, state, forced, tokenize, max_tokens=max_tokens)

    # ------------------------------------------------------------ masks

    def next_token_mask(self) -> np.ndarray:
        """The int32 words ``(ceil(V/32),)`` for the next token.

        After termination only the EOS ids are allowed, so that an engine that keeps sampling a
        finished row (padding a batch) never sees a row with every logit at -inf.
        """
        state = self.state
        if state.finished:
            words = np.zeros((self._vocab_size + 31) // 32, dtype=np.uint32)
            if len(self._eos):
                np.bitwise_or.at(words, self._eos >> 5, np.uint32(1) << (self._eos & 31).astype(np.uint32))
            return words.view(np.int32)
        return self._masker.mask(state)

    def _mask_to_copy(self) -> np.ndarray:
        """:meth:`next_token_mask` without the copy where the masker caches it: to be read only."""
        state = self.state
        return self.next_token_mask() if state.finished else self._masker._mask_words(state)

    def fill_next_token_bitmask(self, bitmask: Any, index: int = 0) -> None:
        """Write the next-token mask into row ``index`` of ``bitmask`` (numpy or torch int32, ``(B, W)`` or ``(W,)``).

        ``W`` may exceed ``ceil(V/32)``: the extra words are set to 0 (nothing allowed there). A
        torch tensor on an accelerator gets one host-to-device copy of the row.
        """
        write_rows(bitmask, [index], [self._mask_to_copy()])

    # ------------------------------------------------------------ internals

    def _try_advance(self, state: State, token: Any) -> State | None:
        try:
            tok = operator.index(token)  # ints, numpy ints, 0-d integer arrays and tensors
        except TypeError:
            raise TypeError(f"token ids are integers, got {type(token).__name__}") from None
        if state.finished or not 0 <= tok < self._vocab_size:
            return None
        try:
            return self._masker.advance(state, tok)
        except TokenRejectedError:
            return None

    def __repr__(self) -> str:
        s = self.state
        return (
            f"Matcher(lexer={s.lexer}, stack_depth={s.stack.depth}, terminated={s.finished}, "
            f"history={self.num_rollback_tokens})"
        )


def fill_next_token_bitmasks(matchers: Sequence[Matcher | None], bitmask: Any, *, workers: MaskWorkers | None = None) -> None:
    """Fill row ``i`` of ``bitmask`` with the next-token mask of ``matchers[i]``; rows of None entries are left as they are.

    ``bitmask`` is numpy or torch int32 ``(B, W)`` with ``B >= len(matchers)``; a torch tensor on
    an accelerator is filled with one host-to-device copy. ``workers``: a
    :class:`~greatgramma.serving.MaskWorkers` whose processes compute a share of the rows beside
    the caller (threads would not: the masks are computed mostly in Python, under the GIL).
    """
    if workers is not None:
        workers.fill(matchers, bitmask)
        return
    rows = [i for i, m in enumerate(matchers) if m is not None]
    write_rows(bitmask, rows, [matchers[i]._mask_to_copy() for i in rows])  # type: ignore[union-attr]


def write_rows(bitmask: Any, rows: list[int], masks: list[np.ndarray]) -> None:
    """Copy each mask into its row, zero-filling words past the mask's end."""
    if not rows:
        return
    if isinstance(bitmask, np.ndarray):
        _write_numpy(bitmask, rows, masks)
        return
    if type(bitmask).__module__.split(".")[0] != "torch":
        raise TypeError(f"bitmask must be a numpy array or a torch tensor, got {type(bitmask).__name__}")
    import torch

    if bitmask.dtype != torch.int32:
        raise TypeError(f"bitmask must be int32, got {bitmask.dtype}")
    if bitmask.dim() not in (1, 2):
        raise ValueError(f"bitmask must be (B, W) or (W,), got shape {tuple(bitmask.shape)}")
    if bitmask.device.type == "cpu":
        _write_numpy(bitmask.numpy(), rows, masks)  # shares memory with the tensor
    else:
        _write_device(bitmask, rows, masks)


def _write_device(bitmask: Any, rows: list[int], masks: list[np.ndarray]) -> None:
    """Accelerator tensors: build the rows on the host, then one copy and one scatter on the device."""
    import torch

    staging = np.zeros((len(rows), bitmask.shape[-1]), dtype=np.int32)
    _write_numpy(staging, list(range(len(rows))), masks)
    host = torch.from_numpy(staging).to(bitmask.device)
    if bitmask.dim() == 1:
        _check_index(rows[0], 1)
        bitmask.copy_(host[0])
        return
    batch = bitmask.shape[0]
    for r in rows:
        _check_index(r, batch)
    index = torch.tensor([r % batch for r in rows], dtype=torch.int64, device=bitmask.device)
    bitmask.index_copy_(0, index, host)


def _write_numpy(arr: np.ndarray, rows: list[int], masks: list[np.ndarray]) -> None:
    if arr.dtype != np.int32:
        raise TypeError(f"bitmask must be int32, got {arr.dtype}")
    if arr.ndim not in (1, 2):
        raise ValueError(f"bitmask must be (B, W) or (W,), got shape {arr.shape}")
    view = arr[None, :] if arr.ndim == 1 else arr
    width = view.shape[1]
    for r, m in zip(rows, masks):
        _check_index(r, view.shape[0])
        n = len(m)
        if width < n:
            raise ValueError(f"bitmask rows have {width} words; this vocabulary needs {n}")
        view[r, :n] = m
        view[r, n:] = 0


def _check_index(index: int, batch: int) -> None:
    if not -batch <= index < batch:
        raise IndexError(f"bitmask row {index} out of range for a bitmask with {batch} rows")
