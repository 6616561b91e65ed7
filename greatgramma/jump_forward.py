"""Jump-forward decoding: the bytes every continuation must begin with, and the tokens safe to force for them.

*Forced bytes* (:func:`forced_bytes`) are read off the mask contract one byte at a time: from a
state, the next bytes ``b`` for which prefix + ``b`` is viable are found by feeding each
candidate byte (:meth:`Masker.viable_prefix`, the byte-level form of what ``advance`` checks for
a token); while exactly one is viable and EOS is not allowed, it is forced. This is exact for
any vocabulary: reading the next bytes off the first bytes of the allowed tokens would miss
bytes that begin no token (a small vocabulary may lack single-byte tokens).

*Forced tokens* (:func:`ff_tokens`) follow llguidance's rule (``docs/fast_forward.md`` in
guidance-ai/llguidance): tokenize the forced bytes, then withhold trailing tokens while a
token that the grammar allows could start inside the last few of them and run past the end of
the forced bytes. Forcing ``order`` where the grammar allows ``orderId`` would leave the model
to continue a split (``order`` + ``Id``) it never saw in training; withholding ``order`` lets
it sample ``orderId`` itself.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence

import numpy as np

from .cache import per_object
from .codes import DEAD
from .errors import TokenizerError
from .masker import Masker, State
from .vocab import Vocabulary

__all__ = ["MAX_FORCED_BYTES", "MAX_WITHHELD_TOKENS", "Tokenize", "forced_bytes", "ff_tokens", "greedy_tokenize"]

MAX_FORCED_BYTES = 256  # a forced run stops here (a grammar can force unbounded text: "a"*)
MAX_WITHHELD_TOKENS = 4  # llguidance's default: up to 4 trailing tokens may be withheld

Tokenize = Callable[[bytes], Sequence[int]]
"""Turns bytes into token ids whose bytes spell a prefix of them (ideally all), as the model's tokenizer would."""


def forced_bytes(masker: Masker, state: State, *, max_bytes: int = MAX_FORCED_BYTES) -> bytes:
    """The longest byte string ``w`` (at most ``max_bytes``) that every continuation of ``state``
    begins with, stopping where EOS is allowed (before ``w`` ends, EOS is not allowed).

    ``w`` may end inside a UTF-8 character: forced bytes are bytes (a grammar that allows ``é``
    and ``è`` forces their common first byte ``\\xc3``); :func:`ff_tokens` never forces a token
    that a longer allowed token could replace, which covers that case.
    """
    if max_bytes < 0:
        raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
    out = bytearray()
    while len(out) < max_bytes and not state.finished and not masker.is_complete(state):
        step = _only_next_byte(masker, state)
        if step is None:
            break
        out.append(step[0])
        state = step[1]
    return bytes(out)


def _only_next_byte(masker: Masker, state: State) -> tuple[int, State] | None:
    """The one byte that can follow ``state``, and the state after it; None when none or several can."""
    found: tuple[int, State] | None = None
    for b in _candidate_bytes(masker, state):
        n, after = masker.viable_prefix(state, bytes((b,)))
        if n:
            if found is not None:
                return None
            found = (b, after)
    return found


def _candidate_bytes(masker: Masker, state: State) -> list[int]:
    """Bytes the lexer does not refuse at once (a superset of the viable next bytes): the lexeme
    goes on, or ends and the byte starts a new one; any byte when the lexeme can back up."""
    lexer = masker.compiled.lexer
    if lexer.fallback(state.lexer)[0] != DEAD:
        return list(range(256))
    q = lexer.base(state.lexer)
    goes_on = lexer.delta[q] != DEAD
    starts_next = (lexer.accept_next[q] != DEAD) & (lexer.delta[0] != DEAD)
    return np.flatnonzero(goes_on | starts_next).tolist()


def ff_tokens(
    masker: Masker,
    state: State,
    forced: bytes,
    tokenize: Tokenize | None = None,
    *,
    max_tokens: int = MAX_WITHHELD_TOKENS,
) -> list[int]:
    """Tokens to append without sampling for the forced bytes ``forced`` of ``state``.

    ``tokenize`` spells bytes as the model's tokenizer would (default :func:`greedy_tokenize`
    over the vocabulary; :func:`greatgramma.tokenize.bytes_tokenizer` wraps a Hugging Face
    tokenizer). Of its tokens, the trailing ones are withheld from the first position ``i``
    within the last ``max_tokens`` tokens' bytes where a token allowed after ``forced[:i]``
    begins with ``forced[i:]`` and is longer (llguidance's rule). Every returned token is
    accepted in turn from ``state``, and their bytes are a prefix of ``forced``.
    """
    if max_tokens < 0:
        raise ValueError(f"max_tokens must be >= 0, got {max_tokens}")
    if not forced:
        return []
    vocab = masker.compiled.vocab
    ids = [int(t) for t in (tokenize or greedy_tokenize(vocab))(forced)]
    pieces = _spelled(vocab, ids, forced)
    ends = np.cumsum([len(p) for p in pieces]).tolist()
    cut = _withhold_from(masker, state, forced, sum(len(p) for p in pieces[len(pieces) - max_tokens :]) if max_tokens else 0)
    return ids[: bisect_right(ends, cut)]


def _spelled(vocab: Vocabulary, ids: list[int], forced: bytes) -> list[bytes]:
    """Each id's bytes, checked to spell a prefix of ``forced`` (a TokenizerError otherwise)."""
    pieces, at = [], 0
    for t in ids:
        piece = vocab.token_bytes[t] if 0 <= t < len(vocab.token_bytes) else None
        if not piece or not forced.startswith(piece, at):
            raise TokenizerError(
                f"tokenize({forced!r}) gave token {t} ({piece!r}) at byte {at}, which does not spell the "
                f"forced bytes there; it must return ids whose bytes spell a prefix of its input"
            )
        pieces.append(piece)
        at += len(piece)
    return pieces


def _withhold_from(masker: Masker, state: State, forced: bytes, window: int) -> int:
    """The first byte offset, among the last ``window`` of ``forced``, where an allowed token
    begins with the rest of ``forced`` and runs past its end; ``len(forced)`` when there is none."""
    start = max(0, len(forced) - window)
    index = _extensions(masker.compiled.vocab)
    n, at = masker.viable_prefix(state, forced[:start])
    if n != start:
        raise ValueError(f"{forced!r} is not forced from this state: the output stops being viable at byte {n}")
    for i in range(start, len(forced)):
        ids = index.extending(forced[i:])
        if len(ids) and _any_allowed(masker.mask(at), ids):
            return i
        at = masker.viable_prefix(at, forced[i : i + 1])[1]
    return len(forced)


def _any_allowed(words: np.ndarray, ids: np.ndarray) -> bool:
    w = words.view(np.uint32)
    return bool(((w[ids >> 5] >> (ids & 31).astype(np.uint32)) & 1).any())


class _Extensions:
    """A vocabulary's tokens sorted by their bytes: the tokens that begin with a byte string and are
    longer are one contiguous run, found by bisection."""

    def __init__(self, vocab: Vocabulary) -> None:
        tb = vocab.token_bytes
        order = sorted((i for i, b in enumerate(tb) if b), key=tb.__getitem__)
        self.keys = [tb[i] for i in order]
        self.ids = np.array(order, dtype=np.int64)

    def extending(self, prefix: bytes) -> np.ndarray:
        """Ids of the tokens that begin with ``prefix`` and are longer."""
        lo = bisect_right(self.keys, prefix)  # past the tokens equal to it
        hi = bisect_left(self.keys, prefix + b"\xff" * 64, lo)  # no token has 64 bytes of 0xff
        while hi < len(self.keys) and self.keys[hi].startswith(prefix):
            hi += 1
        return self.ids[lo:hi]

    def longest_at(self, data: bytes, i: int, longest: int) -> int | None:
        """The smallest id of the longest token that ``data[i:]`` begins with, or None."""
        for n in range(min(longest, len(data) - i), 0, -1):
            piece = data[i : i + n]
            k = bisect_left(self.keys, piece)
            if k < len(self.keys) and self.keys[k] == piece:
                return int(self.ids[k : bisect_right(self.keys, piece, k)].min())
        return None


_extensions = per_object(_Extensions)  # built once per vocabulary (about 0.1-0.3 s at 128K ids)


def greedy_tokenize(vocab: Vocabulary) -> Tokenize:
    """Longest-match tokenization over ``vocab``'s token bytes (a stand-in when the model's own
    tokenizer is not at hand: BPE may split differently). Stops at a byte no token begins with."""
    index = _extensions(vocab)
    longest = max((len(k) for k in index.keys), default=0)

    def tokenize(data: bytes) -> list[int]:
        out, i = [], 0
        while i < len(data):
            t = index.longest_at(data, i, longest)
            if t is None:
                break
            out.append(t)
            i += len(vocab.token_bytes[t])
        return out

    return tokenize
