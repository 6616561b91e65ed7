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


def line_and_column(data: bytes, offset: int) -> tuple[int, int]:
    """1-based line and byte column of byte `offset` in `data` (for messages that point into a file)."""
    line_start = data.rfind(b"\n", 0, offset) + 1
    return data.count(b"\n", 0, offset) + 1, offset - line_start + 1


def _at(data: bytes, offset: int) -> str:
    line, column = line_and_column(data, offset)
    return f"byte offset {offset} (line {line}, column {column})"


def _bytes_of(ids: Sequence[int], token_bytes: Sequence[bytes | None]) -> list[bytes] | None:
    """Each id's bytes, or None when some id has no bytes (special/added token, out of range)."""
    out = []
    for i in ids:
        b = token_bytes[i] if 0 <= i < len(token_bytes) else None
        if b is None:
            return None
        out.append(b)
    return out


def _suffix_spelling(ids: Sequence[int], token_bytes: Sequence[bytes | None], target: bytes) -> list[int] | None:
    """The trailing ids whose bytes are exactly `target`, when the others spell only a prefix before it."""
    pieces = _bytes_of(ids, token_bytes)
    if pieces is None:
        return None
    full = b"".join(pieces)
    if not full.endswith(target):
        return None
    extra, consumed = len(full) - len(target), 0
    for k, piece in enumerate(pieces):
        if consumed == extra:
            return list(ids[k:])
        if consumed > extra:
            return None  # a token straddles the prefix and the text
        consumed += len(piece)
    return [] if consumed == extra else None


def encode_exact(
    tokenizer: Any, text: str, token_bytes: Sequence[bytes | None] | None = None, *, source: str = "<text>"
) -> list[int]:
    """Token ids whose bytes concatenate to exactly `text.encode()`, as the tokenizer splits it.

    `token_bytes` (e.g. `Vocabulary.token_bytes`) is what a token decodes to; when omitted it
    is built from `tokenizer` with `Vocabulary.from_tokenizer`. First tries the plain encoding;
    if that differs from the text (Llama-2 prepends a space), encodes a prefix + text and drops
    the leading tokens that spell the extra bytes before the text. When no such split exists,
    raises TokenizerError (a ValueError) naming `source` and why: a special or unknown token
    in the text and its byte offset, or the first byte offset where the tokens' bytes differ
    from the text's (a normalizer that changes the text).
    """
    if token_bytes is None:
        from .vocab import Vocabulary

        token_bytes = Vocabulary.from_tokenizer(tokenizer, eos_token_ids=()).token_bytes
    target = text.encode("utf-8")
    encodings = []
    for prefix in ("", *_PREFIXES):
        encoding = tokenizer.encode(prefix + text, add_special_tokens=False)
        ids = _suffix_spelling(encoding.ids, token_bytes, target)
        if ids is not None:
            return ids
        encodings.append((prefix, encoding))
    reason = _byteless_token(tokenizer, text, encodings[0][1], token_bytes) or _first_difference(
        tokenizer, text, encodings, token_bytes
    )
    raise TokenizerError(f"{source}: cannot encode it to tokens that spell it exactly: {reason}")


def _byteless_token(tokenizer: Any, text: str, encoding: Any, token_bytes: Sequence[bytes | None]) -> str | None:
    """Why the plain encoding holds a token without bytes (special, added or unknown), or None."""
    added = tokenizer.get_added_tokens_decoder()
    for tid, (start, end) in zip(encoding.ids, encoding.offsets):
        if 0 <= tid < len(token_bytes) and token_bytes[tid] is not None:
            continue
        where = _at(text.encode("utf-8"), len(text[:start].encode("utf-8")))
        name = tokenizer.id_to_token(tid)
        if tid in added and added[tid].content in text[start:end]:
            kind = "special token" if added[tid].special else "added token"
            return f"it holds the {kind} {name!r} (id {tid}) at {where}, and such tokens have no bytes"
        return (
            f"the tokenizer encodes {text[start:end]!r} at {where} as token {name!r} (id {tid}), "
            f"which has no bytes (the unknown token?)"
        )
    return None


def _first_difference(
    tokenizer: Any, text: str, encodings: Sequence[tuple[str, Any]], token_bytes: Sequence[bytes | None]
) -> str:
    """Where the tokens' bytes first differ from the text's, over the attempt that agrees longest."""
    target = text.encode("utf-8")
    best, best_spelled = -1, b""
    for prefix, encoding in encodings:
        # Drop the tokens that begin inside the prefix (offsets count chars of the input).
        ids = [tid for tid, (start, _) in zip(encoding.ids, encoding.offsets) if start >= len(prefix)]
        spelled = b"".join((token_bytes[t] if 0 <= t < len(token_bytes) else None) or b"" for t in ids)
        agree = next((i for i, (a, b) in enumerate(zip(spelled, target)) if a != b), min(len(spelled), len(target)))
        if agree > best:
            best, best_spelled = agree, spelled
    hint = " (its normalizer may change the text)" if tokenizer.normalizer is not None else ""
    return (
        f"the tokenizer does not reproduce its bytes{hint}; they first differ at {_at(target, best)}: "
        f"the text has {target[best:best + 12]!r}, the tokens spell {best_spelled[best:best + 12]!r}"
    )


def bytes_tokenizer(tokenizer: Any, token_bytes: Sequence[bytes | None]) -> Any:
    """A bytes -> ids function for jump-forward (:meth:`Matcher.compute_ff_tokens`) from a
    `tokenizers.Tokenizer`: it encodes the longest prefix of the bytes that is whole UTF-8
    characters (a tokenizer reads text), so its ids may spell less than it was given."""

    def tokenize(data: bytes) -> list[int]:
        text = data.decode("utf-8", errors="ignore")
        while not data.startswith(text.encode("utf-8")):  # a bad byte inside: keep what comes before it
            text = text[:-1]
        return encode_exact(tokenizer, text, token_bytes) if text else []

    return tokenize
