"""Encoding a text into the exact tokens that spell it, with a `tokenizers.Tokenizer` (for checks and benchmarks)."""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import TokenizerError

# Prefixes tried, in order, when encoding the text alone does not give its exact bytes. The
# Llama-2 (SentencePiece, legacy) normalizer prepends "▁" (a space) to whatever it encodes, so
# encoding "\n" + text yields " \n" + text: its "\n" is a byte-fallback token that no merge
# crosses, so the tokens after it spell exactly the text and the leading ones can be dropped.
_PREFIXES = ("\n", "\n\n", " ")


def load_tokenizer(path: str | Path) -> Any:
    """A `tokenizers.Tokenizer` from a tokenizer.json, tokenizer.json.gz or a directory of one."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise TokenizerError("encoding text needs the 'tokenizers' package: pip install tokenizers") from None

    path = Path(path)
    if path.is_dir():
        found = [p for p in (path / "tokenizer.json", path / "tokenizer.json.gz") if p.is_file()]
        if not found:
            raise TokenizerError(f"no tokenizer.json or tokenizer.json.gz in {str(path)!r}")
        path = found[0]
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TokenizerError(f"cannot read tokenizer file {str(path)!r}: {exc.strerror or exc}") from None
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return Tokenizer.from_str(raw.decode("utf-8"))


def _bytes_of(ids: Sequence[int], token_bytes: Sequence[bytes | None]) -> list[bytes] | None:
    """Each id's bytes, or None when some id has no bytes (special/added token, out of range)."""
    out = []
    for i in ids:
        b = token_bytes[i] if 0 <= i < len(token_bytes) else None
        if b is None:
            return None
        out.append(b)
    return out


def encode_exact(tokenizer: Any, text: str, token_bytes: Sequence[bytes | None] | None = None) -> list[int]:
    """Token ids whose bytes concatenate to exactly `text.encode()`, as the tokenizer splits it.

    `token_bytes` (e.g. `Vocabulary.token_bytes`) is what a token decodes to; when omitted it
    is built from `tokenizer` with `Vocabulary.from_tokenizer`. First tries the plain encoding;
    if that differs from the text (Llama-2 prepends a space), encodes a prefix + text and drops
    the leading tokens that spell the extra bytes before the text. Raises ValueError when no
    such split exists (e.g. the text holds an added token, or is not in the normalizer's form).
    """
    if token_bytes is None:
        from .vocab import Vocabulary

        token_bytes = Vocabulary.from_tokenizer(tokenizer, eos_token_ids=()).token_bytes
    target = text.encode("utf-8")
    attempts = []
    for prefix in ("", *_PREFIXES):
        ids = tokenizer.encode(prefix + text, add_special_tokens=False).ids
        pieces = _bytes_of(ids, token_bytes)
        if pieces is None:
            attempts.append(f"{prefix!r}: a token without bytes among {ids[:50]}")
            continue
        full = b"".join(pieces)
        if not full.endswith(target):
            attempts.append(f"{prefix!r}: tokens spell {full[:80]!r}...")
            continue
        extra = len(full) - len(target)
        consumed = 0
        for k, piece in enumerate(pieces):
            if consumed == extra:
                return list(ids[k:])
            if consumed > extra:
                break
            consumed += len(piece)
        else:
            if consumed == extra:  # empty text
                return []
        attempts.append(f"{prefix!r}: a token straddles the prefix and the text")
    raise ValueError(f"cannot encode {text[:60]!r}... to tokens spelling it exactly; tried {attempts}")
