"""Vocabulary: the byte string of every token id of one tokenizer, and which ids are EOS."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import struct
from collections.abc import Iterable, Mapping, Sequence
from itertools import accumulate
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from greatgramma.errors import TokenizerError

__all__ = ["Vocabulary", "TokenId"]

TokenId = int

# File names looked up inside a tokenizer directory, in this order.
_TOKENIZER_FILE_NAMES = ("tokenizer.json", "tokenizer.json.gz")
_TOKENIZER_CONFIG = "tokenizer_config.json"
_GENERATION_CONFIG = "generation_config.json"

_SPIECE_SPACE = "\u2581"  # SentencePiece's "▁", the stand-in for a space byte
_BYTE_FALLBACK_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")
_FINGERPRINT_MAGIC = b"greatgramma.Vocabulary/1\0"


def _gpt2_byte_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable-character alphabet (openai/gpt-2 `encoder.py`).

    Printable Latin-1 bytes map to themselves; the other 68 bytes map, in byte order, to
    U+0100 onwards, so every token of a byte-level BPE vocabulary is a string of these chars.
    """
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    mapping = {b: chr(b) for b in keep}
    extra = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + extra)
            extra += 1
    return mapping


def _byte_level_decoder() -> np.ndarray:
    """Lookup array: alphabet code point -> its byte, and -1 for code points outside the alphabet."""
    alphabet = _gpt2_byte_to_unicode()
    table = np.full(max(ord(c) for c in alphabet.values()) + 1, -1, dtype=np.int16)
    for byte, char in alphabet.items():
        table[ord(char)] = byte
    return table


_BYTE_LEVEL_DECODER = _byte_level_decoder()


class Vocabulary:
    """Token id -> bytes for one tokenizer, plus which ids are EOS. Immutable.

    `token_bytes[i]` is what token `i` decodes to, as raw bytes (possibly half a UTF-8
    character), or None for an id that has no bytes: special and added tokens, the unknown
    token, and ids with no piece. `vocab_size` is the model's logits width; it may exceed
    `len(token_bytes)` and the ids past the end have no bytes either. The masker never allows
    an id without bytes except an EOS id, and that only when the output is complete.
    """

    __slots__ = ("token_bytes", "vocab_size", "eos_token_ids", "_fingerprint", "__weakref__")

    token_bytes: tuple[bytes | None, ...]
    vocab_size: int
    eos_token_ids: tuple[int, ...]

    def __init__(
        self,
        token_bytes: Iterable[bytes | bytearray | None],
        *,
        eos_token_ids: Iterable[int],
        vocab_size: int | None = None,
    ) -> None:
        """Validate and freeze; prefer the `from_*` constructors."""
        tb = list(token_bytes)
        if not set(map(type, tb)) <= {bytes, type(None)}:
            for i, b in enumerate(tb):
                if isinstance(b, (bytearray, memoryview)):
                    tb[i] = bytes(b)
                elif not (b is None or isinstance(b, bytes)):
                    raise TokenizerError(f"token {i}: bytes or None expected, got {type(b).__name__} {b!r}")
        size = _check_vocab_size(vocab_size, len(tb))
        eos = _check_eos_ids(eos_token_ids, size)
        object.__setattr__(self, "token_bytes", tuple(tb))
        object.__setattr__(self, "vocab_size", size)
        object.__setattr__(self, "eos_token_ids", eos)
        object.__setattr__(self, "_fingerprint", None)

    # -- constructors -------------------------------------------------------------------------

    @classmethod
    def from_token_bytes(
        cls,
        token_bytes: Iterable[bytes | bytearray | None],
        *,
        eos_token_ids: Iterable[int],
        vocab_size: int | None = None,
    ) -> Vocabulary:
        """A vocabulary from explicit token bytes (tests, custom tokenizers).

        `eos_token_ids` is required and may be empty (then EOS is never allowed).
        """
        return cls(token_bytes, eos_token_ids=eos_token_ids, vocab_size=vocab_size)

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        *,
        vocab_size: int | None = None,
        eos_token_ids: Iterable[int] | None = None,
    ) -> Vocabulary:
        """Load an HF `tokenizer.json` (or `tokenizer.json.gz`, or a directory holding one).

        EOS ids, unless given, come from `tokenizer_config.json` (`eos_token`) and
        `generation_config.json` (`eos_token_id`) beside the file; their union is used.
        """
        file = _find_tokenizer_file(Path(path))
        text = _read_text(file)
        configs = (file.parent / _TOKENIZER_CONFIG, file.parent / _GENERATION_CONFIG)
        return cls._from_json_text(
            text, source=str(file), vocab_size=vocab_size, eos_token_ids=eos_token_ids, configs=configs
        )

    @classmethod
    def from_tokenizer(
        cls,
        tokenizer: Any,
        *,
        vocab_size: int | None = None,
        eos_token_ids: Iterable[int] | None = None,
    ) -> Vocabulary:
        """From a `tokenizers.Tokenizer` or a transformers *fast* tokenizer object.

        A transformers tokenizer supplies its `eos_token_id` when `eos_token_ids` is not
        given; a bare `tokenizers.Tokenizer` knows no EOS, so pass `eos_token_ids=`.
        """
        backend = getattr(tokenizer, "backend_tokenizer", None)
        module = type(tokenizer).__module__
        if backend is not None and callable(getattr(backend, "to_str", None)):
            source = f"transformers tokenizer {type(tokenizer).__name__}"
            if eos_token_ids is None:
                eos = getattr(tokenizer, "eos_token_id", None)
                if isinstance(eos, int) and not isinstance(eos, bool):
                    eos_token_ids = (eos,)
                elif isinstance(eos, (list, tuple)) and eos:
                    eos_token_ids = tuple(eos)
            text = backend.to_str()
        elif module.startswith("tokenizers") and callable(getattr(tokenizer, "to_str", None)):
            source = "tokenizers.Tokenizer object"
            text = tokenizer.to_str()
        else:
            hint = (
                " (a slow transformers tokenizer: load it with use_fast=True, or pass its tokenizer.json "
                "to Vocabulary.from_file)"
                if hasattr(tokenizer, "convert_ids_to_tokens")
                else ""
            )
            kind = f"{module}.{type(tokenizer).__name__}"
            raise TokenizerError(
                f"cannot read a vocabulary from a {kind} object: "
                f"expected a tokenizers.Tokenizer or a transformers fast tokenizer{hint}"
            )
        return cls._from_json_text(
            text, source=source, vocab_size=vocab_size, eos_token_ids=eos_token_ids, configs=()
        )

    @classmethod
    def from_pretrained(
        cls,
        name_or_dir: str | os.PathLike[str],
        *,
        vocab_size: int | None = None,
        eos_token_ids: Iterable[int] | None = None,
    ) -> Vocabulary:
        """From a local file or directory (as `from_file`), else from a Hugging Face Hub repo id.

        Hub downloads go through `huggingface_hub` (an optional dependency) and honour
        `HF_HUB_OFFLINE=1` by reading only the local cache.
        """
        raw = os.fspath(name_or_dir)
        local = Path(raw).expanduser()
        if local.exists() or raw.startswith((".", "/", "~", "\\")) or raw.endswith((".json", ".gz")):
            return cls.from_file(local, vocab_size=vocab_size, eos_token_ids=eos_token_ids)
        try:
            from huggingface_hub import hf_hub_download
        except ImportError:
            raise TokenizerError(
                f"{raw!r} is not a local path and huggingface_hub is not installed to fetch it from the Hub: "
                f"pip install huggingface_hub, or pass a local tokenizer.json path or directory"
            ) from None
        offline = os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE")
        try:
            file = Path(hf_hub_download(raw, "tokenizer.json", local_files_only=offline))
        except Exception as exc:  # the hub raises many types: missing repo, no network, gated...
            how = "go online (unset HF_HUB_OFFLINE)" if offline else "check the repo id and your network"
            raise TokenizerError(
                f"cannot get tokenizer.json of {raw!r} from the Hugging Face Hub "
                f"({type(exc).__name__}: {exc}); "
                f"pass a local tokenizer.json path or directory, or {how}"
            ) from exc
        configs: list[Path] = []
        for name in (_TOKENIZER_CONFIG, _GENERATION_CONFIG):
            try:
                configs.append(Path(hf_hub_download(raw, name, local_files_only=offline)))
            except Exception:  # optional files: many repos lack generation_config.json
                pass
        return cls._from_json_text(
            _read_text(file), source=f"{raw} ({file})", vocab_size=vocab_size,
            eos_token_ids=eos_token_ids, configs=tuple(configs),
        )

    @classmethod
    def _from_json_text(
        cls,
        text: str,
        *,
        source: str,
        vocab_size: int | None,
        eos_token_ids: Iterable[int] | None,
        configs: Sequence[Path],
    ) -> Vocabulary:
        """Shared tail of the loaders: parse tokenizer.json text, resolve EOS ids, validate."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TokenizerError(f"{source}: malformed JSON: {exc}") from None
        token_bytes, name_to_id = _token_bytes_from_json(data, source)
        if eos_token_ids is None:
            eos_token_ids = _eos_ids_from_configs(configs, name_to_id, source)
        try:
            return cls(token_bytes, eos_token_ids=eos_token_ids, vocab_size=vocab_size)
        except TokenizerError as exc:
            raise TokenizerError(f"{source}: {exc}") from None

    # -- queries ------------------------------------------------------------------------------

    def __len__(self) -> int:
        """The model's logits width (`vocab_size`), which bitmasks are sized by."""
        return self.vocab_size

    def fingerprint(self) -> str:
        """SHA-256 hex of a canonical serialization of token bytes, vocab size and EOS ids.

        Compiled artifacts store it to refuse loading against another vocabulary.
        """
        fp = self._fingerprint
        if fp is None:
            h = hashlib.sha256(_FINGERPRINT_MAGIC)
            h.update(struct.pack("<QQQ", self.vocab_size, len(self.token_bytes), len(self.eos_token_ids)))
            h.update(struct.pack(f"<{len(self.eos_token_ids)}Q", *self.eos_token_ids))
            # Per token: u32 length + 1 (0 = no bytes), then the bytes; unambiguous to parse.
            parts = []
            pack = struct.Struct("<I").pack
            for b in self.token_bytes:
                if b is None:
                    parts.append(b"\0\0\0\0")
                else:
                    parts.append(pack(len(b) + 1))
                    parts.append(b)
            h.update(b"".join(parts))
            fp = h.hexdigest()
            object.__setattr__(self, "_fingerprint", fp)
        return fp

    # -- value semantics ----------------------------------------------------------------------

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Vocabulary is immutable (cannot set {name!r})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Vocabulary is immutable (cannot delete {name!r})")

    def __eq__(self, other: object) -> bool:
        if other is self:  # weak-keyed caches compare the referents, with no identity check first
            return True
        if not isinstance(other, Vocabulary):
            return NotImplemented
        return (
            self.vocab_size == other.vocab_size
            and self.eos_token_ids == other.eos_token_ids
            and self.token_bytes == other.token_bytes
        )

    def __hash__(self) -> int:
        return hash(self.fingerprint())

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self.token_bytes, self.vocab_size, self.eos_token_ids))

    def __repr__(self) -> str:
        with_bytes = sum(b is not None for b in self.token_bytes)
        return (
            f"Vocabulary(vocab_size={self.vocab_size}, tokenizer_ids={len(self.token_bytes)}, "
            f"with_bytes={with_bytes}, eos_token_ids={self.eos_token_ids})"
        )


def _rebuild(token_bytes: tuple[bytes | None, ...], vocab_size: int, eos: tuple[int, ...]) -> Vocabulary:
    """Unpickle helper (Vocabulary blocks attribute assignment, so pickle cannot set slots)."""
    return Vocabulary(token_bytes, eos_token_ids=eos, vocab_size=vocab_size)


# -- validation --------------------------------------------------------------------------------


def _is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _check_vocab_size(vocab_size: int | None, n_ids: int) -> int:
    """`vocab_size` or, when None, the tokenizer's id count; never below the id count."""
    if vocab_size is None:
        return n_ids
    if not _is_int(vocab_size):
        raise TokenizerError(f"vocab_size must be an int, got {type(vocab_size).__name__} {vocab_size!r}")
    if vocab_size < n_ids:
        raise TokenizerError(
            f"vocab_size={vocab_size} is smaller than the tokenizer's {n_ids} ids "
            f"(vocab_size is the model's logits width, which covers every token id)"
        )
    return int(vocab_size)


def _check_eos_ids(eos_token_ids: Iterable[int], vocab_size: int) -> tuple[int, ...]:
    """Ints in [0, vocab_size), deduplicated and sorted."""
    if isinstance(eos_token_ids, (str, bytes)) or _is_int(eos_token_ids):
        raise TokenizerError(f"eos_token_ids must be a sequence of ints, got {eos_token_ids!r}")
    try:
        ids = list(eos_token_ids)
    except TypeError:
        raise TokenizerError(f"eos_token_ids must be a sequence of ints, got {eos_token_ids!r}") from None
    for i in ids:
        if not _is_int(i):
            raise TokenizerError(f"EOS token id {i!r} is not an int")
        if not 0 <= i < vocab_size:
            raise TokenizerError(f"EOS token id {i} is out of range for vocab_size={vocab_size}")
    return tuple(sorted(set(int(i) for i in ids)))


# -- reading files -----------------------------------------------------------------------------


def _find_tokenizer_file(path: Path) -> Path:
    """The tokenizer.json(.gz) that `path` names or that the directory `path` holds."""
    path = path.expanduser()
    if path.is_dir():
        for name in _TOKENIZER_FILE_NAMES:
            if (path / name).is_file():
                return path / name
        raise TokenizerError(
            f"{path}: directory holds no {' or '.join(_TOKENIZER_FILE_NAMES)}"
        )
    if not path.is_file():
        raise TokenizerError(f"{path}: no such tokenizer file or directory")
    return path


def _read_text(path: Path) -> str:
    """The file's text as UTF-8, gunzipped when it is gzip (by magic bytes, whatever its name)."""
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        return raw.decode("utf-8")
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise TokenizerError(f"{path}: cannot read tokenizer file: {exc}") from None
    except UnicodeDecodeError as exc:
        raise TokenizerError(f"{path}: not UTF-8 text: {exc}") from None


def _read_json_object(path: Path) -> dict[str, Any] | None:
    """A JSON object file, or None when absent; malformed content is an error naming the path."""
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TokenizerError(f"{path}: cannot read JSON: {exc}") from None
    if not isinstance(data, dict):
        raise TokenizerError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


# -- tokenizer.json -> token bytes -------------------------------------------------------------


def _components(node: Any, list_key: str) -> list[dict[str, Any]]:
    """Flatten a normalizer / pre_tokenizer / decoder, descending into `Sequence` nodes."""
    if not isinstance(node, dict):
        return []
    if node.get("type") == "Sequence":
        out: list[dict[str, Any]] = []
        for child in node.get(list_key) or ():
            out.extend(_components(child, list_key))
        return out
    return [node]


def _token_bytes_from_json(data: Any, source: str) -> tuple[list[bytes | None], dict[str, int]]:
    """Token bytes by id, and token content -> id (added tokens first) for EOS lookup."""
    if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
        raise TokenizerError(f"{source}: not a Hugging Face tokenizer.json (no 'model' object)")
    model = data["model"]
    decoders = _components(data.get("decoder"), "decoders")
    pre_tokenizers = _components(data.get("pre_tokenizer"), "pretokenizers")
    byte_level = any(c.get("type") == "ByteLevel" for c in decoders + pre_tokenizers)
    _check_decoders(decoders, byte_level, bool(model.get("byte_fallback")), source)
    byte_fallback = bool(model.get("byte_fallback")) or any(c.get("type") == "ByteFallback" for c in decoders)
    space_char = _space_stand_in(decoders, pre_tokenizers, source)

    pieces = _model_pieces(model, byte_level, source)
    added_ids = _added_token_ids(data, pieces, source)
    wordpiece = decoders[0] if [c.get("type") for c in decoders] == ["WordPiece"] else None
    if byte_level:
        piece_bytes = _byte_level_bytes(pieces.ids, pieces.texts, source)
    elif wordpiece is not None:
        piece_bytes = _wordpiece_bytes(pieces.ids, pieces.texts, wordpiece, source)
    else:
        piece_bytes = _sentencepiece_bytes(pieces.ids, pieces.texts, space_char, byte_fallback, source)
    return _bytes_by_id(pieces, piece_bytes, added_ids), pieces.name_to_id


class _Pieces(NamedTuple):
    """The vocabulary of a tokenizer model: its pieces (text and id), and the unknown token's id."""

    ids: list[int]
    texts: list[str]
    name_to_id: dict[str, int]  # text -> id, for EOS lookup (added tokens are entered over it)
    unk_id: int | None


def _model_pieces(model: dict[str, Any], byte_level: bool, source: str) -> _Pieces:
    """The pieces of a BPE or Unigram model (very old files omit the type: inferred from the shape)."""
    mtype = model.get("type")
    if mtype is None and "vocab" in model:
        mtype = "BPE" if "merges" in model else "Unigram" if isinstance(model["vocab"], list) else None
    if mtype == "BPE":
        return _bpe_pieces(model, source)
    if mtype == "Unigram":
        if byte_level:
            raise TokenizerError(f"{source}: Unigram model with a ByteLevel decoder is not supported")
        return _unigram_pieces(model, source)
    raise TokenizerError(
        f"{source}: unsupported tokenizer model type {mtype!r} "
        f"(supported: byte-level BPE, SentencePiece-style BPE, Unigram)"
    )


def _bpe_pieces(model: dict[str, Any], source: str) -> _Pieces:
    """A BPE model's ``vocab`` object (piece -> id), checked: ids are distinct non-negative ints."""
    for key in ("continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(key):
            raise TokenizerError(
                f"{source}: BPE with {key}={model[key]!r} is not supported "
                f"(token bytes would depend on the word position)"
            )
    vocab = model.get("vocab")
    if not isinstance(vocab, dict):
        raise TokenizerError(f"{source}: BPE model 'vocab' must be an object of piece -> id")
    ids = list(vocab.values())
    if not (set(map(type, ids)) <= {int} and min(ids, default=0) >= 0 and len(set(ids)) == len(ids)):
        seen: dict[int, str] = {}
        for piece, tid in vocab.items():
            if not _is_int(tid) or tid < 0:
                raise TokenizerError(f"{source}: BPE piece {piece!r} has invalid id {tid!r}")
            if tid in seen:
                raise TokenizerError(f"{source}: token id {tid} is given to both {seen[tid]!r} and {piece!r}")
            seen[tid] = piece
    unk = model.get("unk_token")
    return _Pieces(ids, list(vocab), dict(vocab), vocab[unk] if isinstance(unk, str) and unk in vocab else None)


def _unigram_pieces(model: dict[str, Any], source: str) -> _Pieces:
    """A Unigram model's ``vocab`` list of ``[piece, score]``, ids by position."""
    vocab = model.get("vocab")
    if not isinstance(vocab, list):
        raise TokenizerError(f"{source}: Unigram model 'vocab' must be a list of [piece, score]")
    name_to_id: dict[str, int] = {}
    for tid, entry in enumerate(vocab):
        if not (isinstance(entry, (list, tuple)) and entry and isinstance(entry[0], str)):
            raise TokenizerError(f"{source}: Unigram vocab entry {tid} is not [piece, score]: {entry!r}")
        name_to_id.setdefault(entry[0], tid)
    unk = model.get("unk_id")
    return _Pieces(list(range(len(vocab))), [entry[0] for entry in vocab], name_to_id, unk if _is_int(unk) else None)


def _added_token_ids(data: dict[str, Any], pieces: _Pieces, source: str) -> list[int]:
    """The ids of ``added_tokens``, checked; their contents are entered in ``pieces.name_to_id``."""
    added = data.get("added_tokens") or []
    if not isinstance(added, list):
        raise TokenizerError(f"{source}: 'added_tokens' must be a list")
    added_ids: list[int] = []
    for entry in added:
        tid = entry.get("id") if isinstance(entry, dict) else None
        if not _is_int(tid) or tid < 0:
            raise TokenizerError(f"{source}: added token {entry!r} has no valid id")
        if not isinstance(entry.get("content"), str):
            raise TokenizerError(f"{source}: added token {entry!r} has no 'content' string")
        added_ids.append(tid)
    _check_added_token_ids(added, dict(zip(pieces.texts, pieces.ids)), len(pieces.ids), source)
    for entry in added:
        pieces.name_to_id[entry["content"]] = entry["id"]  # an added token wins over a vocab piece of the same text
    return added_ids


def _bytes_by_id(pieces: _Pieces, piece_bytes: list[bytes], added_ids: list[int]) -> list[bytes | None]:
    """Token bytes indexed by id: None for ids without a piece, added tokens and the unknown token."""
    n_ids = max(max(pieces.ids, default=-1), max(added_ids, default=-1)) + 1
    if n_ids == len(pieces.ids) and pieces.ids == list(range(n_ids)):
        token_bytes: list[bytes | None] = piece_bytes  # type: ignore[assignment]
    else:
        token_bytes = [None] * n_ids
        for tid, b in zip(pieces.ids, piece_bytes):
            token_bytes[tid] = b
    for tid in added_ids:
        token_bytes[tid] = None
    if pieces.unk_id is not None and 0 <= pieces.unk_id < n_ids:
        token_bytes[pieces.unk_id] = None  # the unknown token stands for text it does not hold
    return token_bytes


# Decoders whose effect on one token in the middle of a text greatgramma reproduces exactly
# (with the limits `_check_decoders` enforces); any other decoder is refused.
_EXACT_DECODERS = ("ByteLevel", "Metaspace", "ByteFallback", "Fuse", "Strip", "Replace", "WordPiece")
# Decoders that join the tokens into one string: a Strip after them only trims the text's ends.
_JOINING_DECODERS = ("Fuse", "ByteLevel")


def _check_decoders(
    decoders: list[dict[str, Any]], byte_level: bool, model_byte_fallback: bool, source: str
) -> None:
    """Refuse a decoder chain whose bytes per token greatgramma would not reproduce exactly.

    A token's bytes are what the decoder makes of it in the middle of a text; a decoder that
    greatgramma does not model, or one that does not undo what the model and pre-tokenizer
    encode, would silently give masks over the wrong bytes.
    """
    kinds = [c.get("type") for c in decoders]
    joined = False
    for component, kind in zip(decoders, kinds):
        if kind not in _EXACT_DECODERS:
            raise TokenizerError(
                f"{source}: decoder {kind!r} is not supported (supported: {', '.join(_EXACT_DECODERS)}); "
                f"the bytes its tokens decode to cannot be known exactly"
            )
        if byte_level and kind not in ("ByteLevel", "Fuse", "Strip"):
            raise TokenizerError(f"{source}: decoder {kind!r} combined with ByteLevel is not supported")
        if kind == "Strip" and not joined:
            raise TokenizerError(
                f"{source}: decoder 'Strip' before any Fuse strips every token, not only the text's ends: not supported"
            )
        if kind == "WordPiece" and len(decoders) > 1:
            raise TokenizerError(f"{source}: decoder 'WordPiece' combined with {kinds} is not supported")
        if kind == "Replace":
            _check_replace(component, source)
        joined = joined or kind in _JOINING_DECODERS
    if byte_level and decoders and "ByteLevel" not in kinds:
        raise TokenizerError(
            f"{source}: the pre-tokenizer is ByteLevel but the decoder {kinds} does not map the byte "
            f"alphabet back to bytes: not supported"
        )
    if model_byte_fallback and decoders and not byte_level and "ByteFallback" not in kinds:
        raise TokenizerError(
            f"{source}: the model falls back to <0xNN> byte pieces but the decoder {kinds} has no "
            f"ByteFallback to turn them back into bytes: not supported"
        )


def _check_replace(component: dict[str, Any], source: str) -> None:
    """A Replace decoder is supported when it turns one character (the space stand-in) into a space."""
    pattern, content = component.get("pattern"), component.get("content")
    literal = pattern.get("String") if isinstance(pattern, dict) else None
    if not (isinstance(literal, str) and len(literal) == 1 and content == " "):
        raise TokenizerError(
            f"{source}: decoder 'Replace' {pattern!r} -> {content!r} is not supported "
            f"(only one character -> ' ', the space stand-in)"
        )


def _space_stand_in(decoders: list[dict[str, Any]], pre_tokenizers: list[dict[str, Any]], source: str) -> str:
    """The character that stands for a space in pieces: the decoder's Replace or Metaspace one, else ▁."""
    replaced = {c["pattern"]["String"] for c in decoders if c.get("type") == "Replace"}
    metaspace = {
        c["replacement"] for c in decoders + pre_tokenizers
        if c.get("type") == "Metaspace" and isinstance(c.get("replacement"), str)
    }
    found = replaced or metaspace
    if len(found) > 1 or (replaced and metaspace - replaced):
        raise TokenizerError(
            f"{source}: several characters stand for a space ({sorted(replaced | metaspace)}): not supported"
        )
    return found.pop() if found else _SPIECE_SPACE


def _check_added_token_ids(
    added: list[dict[str, Any]], pieces: Mapping[str, int], n_pieces: int, source: str
) -> None:
    """Refuse added tokens whose declared id differs from the one `tokenizers` gives them on load.

    `tokenizers` does not read the ids of `added_tokens`: it adds the tokens in file order, a
    token that is a vocabulary piece taking the piece's id and any other the next free id past
    the vocabulary: since 0.22.2 the piece count, then one more per new token; before, one past
    the largest added id so far (which differs only when piece ids leave gaps). A file whose ids
    disagree is loaded with other ids than it declares (HF's EOS id would not be ours).
    """
    piece_at = {tid: piece for piece, tid in pieces.items()}
    given: dict[str, int] = {}
    next_id = n_pieces  # tokenizers >= 0.22.2
    top = -1  # earlier versions: the largest id given so far
    for entry in added:
        content, declared = entry["content"], entry["id"]
        if not content:
            raise TokenizerError(f"{source}: added token {declared} is empty (the tokenizers library ignores it)")
        if content in given or content in pieces:
            current = earlier = given.get(content, pieces.get(content))
            why = "the id it already has" if content in given else "the id of the vocabulary piece of that text"
        else:
            current, next_id = next_id, next_id + 1
            earlier = n_pieces if top < 0 or (top < n_pieces and n_pieces > 0) else top + 1
            why = f"the next id past the vocabulary's {n_pieces} pieces and the added tokens before it"
        if declared != current or declared != earlier:
            loads = f"id {current}" if current == earlier else f"id {current} (0.22.2 and later) or {earlier} (before)"
            raise TokenizerError(
                f"{source}: added token {content!r} is declared with id {declared}, but the tokenizers "
                f"library loads it with {loads} ({why}); fix the ids in 'added_tokens'"
            )
        if piece_at.get(declared, content) != content:
            raise TokenizerError(
                f"{source}: id {declared} is both the added token {content!r} and the vocabulary piece "
                f"{piece_at[declared]!r}"
            )
        given[content] = declared
        top = max(top, declared)


# What WordPiece's `cleanup` rewrites in each decoded token, in order (tokenizers' decoders/wordpiece.rs).
_WORDPIECE_CLEANUP = (
    (" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"), (" 'm", "'m"),
    (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"),
)


def _wordpiece_bytes(ids: list[int], pieces: list[str], decoder: dict[str, Any], source: str) -> list[bytes]:
    """Decode pieces as a WordPiece decoder does past a text's first token.

    A piece starting with the prefix (`##`) continues the word before it and loses the prefix;
    any other starts a new word after a space; `cleanup` then glues punctuation and
    contractions back, within the token.
    """
    prefix = decoder.get("prefix", "##")
    cleanup = decoder.get("cleanup", True)
    if not isinstance(prefix, str) or not isinstance(cleanup, bool):
        raise TokenizerError(f"{source}: decoder 'WordPiece' has a malformed prefix or cleanup: {decoder!r}")
    out: list[bytes] = []
    for tid, piece in zip(ids, pieces):
        text = piece[len(prefix):] if piece.startswith(prefix) else " " + piece
        if cleanup:
            for old, new in _WORDPIECE_CLEANUP:
                text = text.replace(old, new)
        try:
            out.append(text.encode("utf-8"))
        except UnicodeEncodeError:
            raise TokenizerError(f"{source}: token {tid} {piece!r} is not valid Unicode") from None
    return out


def _byte_level_bytes(ids: list[int], pieces: list[str], source: str) -> list[bytes]:
    """Decode GPT-2 byte-alphabet pieces: one char is one byte, so map all chars at once and slice."""
    codes = np.frombuffer("".join(pieces).encode("utf-32-le"), dtype=np.uint32)
    table = _BYTE_LEVEL_DECODER
    decoded = table[np.minimum(codes, len(table) - 1)]
    bad = (decoded < 0) | (codes >= len(table))
    if bad.any():
        ends = np.cumsum([len(p) for p in pieces])
        k = int(np.searchsorted(ends, int(np.argmax(bad)), side="right"))
        char = next(c for c in pieces[k] if ord(c) >= len(table) or table[ord(c)] < 0)
        raise TokenizerError(
            f"{source}: token {ids[k]} {pieces[k]!r} has char {char!r} (U+{ord(char):04X}) outside the "
            f"byte-level (GPT-2) alphabet"
        )
    blob = decoded.astype(np.uint8).tobytes()
    ends_list = list(accumulate(map(len, pieces)))
    return [blob[s:e] for s, e in zip([0, *ends_list], ends_list)]


def _sentencepiece_bytes(
    ids: list[int], pieces: list[str], space_char: str, byte_fallback: bool, source: str
) -> list[bytes]:
    """Decode SentencePiece pieces: `▁` is a space, `<0xNN>` one raw byte (with byte fallback)."""
    out: list[bytes] = []
    fallback = _BYTE_FALLBACK_PIECE.fullmatch
    for tid, piece in zip(ids, pieces):
        if byte_fallback and piece[:3] == "<0x" and (m := fallback(piece)) is not None:
            out.append(bytes((int(m.group(1), 16),)))
            continue
        try:
            out.append(piece.replace(space_char, " ").encode("utf-8"))
        except UnicodeEncodeError:  # lone surrogates from "\udXXX" escapes in the JSON
            raise TokenizerError(f"{source}: token {tid} {piece!r} is not valid Unicode") from None
    return out


# -- EOS ids -----------------------------------------------------------------------------------


def _eos_ids_from_configs(
    configs: Sequence[Path], name_to_id: Mapping[str, int], source: str
) -> tuple[int, ...]:
    """Union of `tokenizer_config.json`'s `eos_token` and `generation_config.json`'s `eos_token_id`."""
    found: set[int] = set()
    looked: list[str] = []
    for path in configs:
        data = _read_json_object(path)
        if data is None:
            continue
        looked.append(str(path))
        if path.name == _GENERATION_CONFIG:
            value = data.get("eos_token_id")
            values = value if isinstance(value, list) else [] if value is None else [value]
            for v in values:
                if not _is_int(v):
                    raise TokenizerError(f"{path}: eos_token_id {v!r} is not an int")
                found.add(v)
            continue
        eos = data.get("eos_token")
        if isinstance(eos, dict):
            eos = eos.get("content")
        if eos is None:
            continue
        if not isinstance(eos, str):
            raise TokenizerError(
                f"{path}: eos_token must be a string or an object with 'content', got {eos!r}"
            )
        tid = name_to_id.get(eos)
        if tid is None:
            decoder = data.get("added_tokens_decoder")
            if isinstance(decoder, dict):
                for key, entry in decoder.items():
                    if isinstance(entry, dict) and entry.get("content") == eos and key.isdigit():
                        tid = int(key)
                        break
        if tid is None:
            raise TokenizerError(
                f"{path}: eos_token {eos!r} is neither an added token nor a piece of {source}"
            )
        found.add(tid)
    if not found:
        if looked:
            where = f" in {', '.join(looked)}"
        else:
            where = f" (no {_TOKENIZER_CONFIG} or {_GENERATION_CONFIG} found)"
        raise TokenizerError(
            f"{source}: no EOS token was found{where}; pass eos_token_ids= explicitly "
            f"(an empty tuple if the output never ends with EOS)"
        )
    return tuple(sorted(found))
