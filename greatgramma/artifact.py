"""The compiled-grammar file: a versioned, checksummed container of the preprocessing tables.

Layout: one JSON header line (format, library version, the grammar's text with its sha256 and
fingerprint, the vocabulary's fingerprint, terminals, LALR scalars, sha256 of the payload), then
a compressed ``.npz`` payload with every array (the token trie is the vocabulary's: rebuilt, not stored).

Loading validates everything the file claims before anything is built: header fields and their
types, array names, dtypes and shapes, every index against what it indexes, and that the tables
agree with each other and with the vocabulary. A damaged, edited or mismatched file is an
:class:`ArtifactError` naming the file and the fault, never a deep exception or a wrong mask.
Edits that keep every table well formed (an in-range value changed) are what
``load(path, verify=True)`` is for: it compiles the stored grammar for the stored vocabulary
again and compares all tables.

The lexer's extended (backing-up) states are numbered in the order compiling met them, and the
saved outcome rows name them: the file lists their keys in id order and loading replays them
(:meth:`LexingTransducer.restore_extended`) before building anything that reads those rows.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .codes import DEAD, END, UNKNOWN
from .errors import ArtifactError, GreatGrammaError
from .grammar import Grammar
from .indenter import Indenter
from .semicolons import Semicolons
from .lexer import MAX_BACKTRACK, TerminalSpec
from .lexing import LexingTransducer
from .parse_table import ParseTable
from .trie import TokenTrie, trie_of
from .version import __version__
from .vocab import Vocabulary

MAGIC = "greatgramma-compiled"
FORMAT_VERSION = 7  # 6: grammar.semicolons; 7: grammar.indenter.line_start


class Invalid(ValueError):
    """What is wrong with a file; ``load`` reports it as an ArtifactError naming the file."""


# ------------------------------------------------------------------ save


def write(path: str | os.PathLike, header: dict, arrays: dict[str, np.ndarray]) -> None:
    """Write a compiled grammar's tables (``header``: its ``grammar``, ``vocab``, ``terminals``,
    ``lalr``, ``preprocessed_subtrees`` and ``timings`` fields; layout: module docstring).

    Atomic: the file is written under a temporary name in the same directory and renamed over
    ``path``, so a save that fails leaves a previous artifact at ``path`` as it was.
    """
    arrays = {name: np.ascontiguousarray(arrays[name], dtype=dtype) for name, (dtype, _) in ARRAYS.items()}
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)  # suffix rows and lexer tables shrink several-fold
    payload = buf.getvalue()
    full = {"magic": MAGIC, "format": FORMAT_VERSION, "library_version": __version__, **header}
    full["payload_sha256"] = hashlib.sha256(payload).hexdigest()
    _write_atomically(Path(path), [json.dumps(full).encode("utf-8") + b"\n", payload])


def grammar_header(g: Grammar) -> dict:
    """The header's ``grammar`` field."""
    return {
        "text": g.text,
        "text_sha256": _sha256_text(g.text),
        "start": g.start,
        "source": g.source,
        "fingerprint": g.fingerprint(),
        "indenter": g.indenter.to_dict() if g.indenter is not None else None,
        "semicolons": _semicolons_dict(g),
    }


def _semicolons_dict(g: Grammar) -> dict | None:
    """The grammar's :class:`Semicolons` postlexer as JSON values, or None."""
    post = g.postlexer
    return None if not isinstance(post, Semicolons) else {k: v for k, v in post.to_dict().items() if k != "kind"}


def vocab_header(v: Vocabulary) -> dict:
    """The header's ``vocab`` field."""
    return {"vocab_size": v.vocab_size, "eos_token_ids": list(v.eos_token_ids), "fingerprint": v.fingerprint()}


def vocab_arrays(v: Vocabulary) -> dict[str, np.ndarray]:
    """The token bytes as arrays (all concatenated, and lengths: -1 for none)."""
    return {
        "vocab_bytes": np.frombuffer(b"".join(b for b in v.token_bytes if b is not None), dtype=np.uint8),
        "vocab_lengths": np.array([-1 if b is None else len(b) for b in v.token_bytes], dtype=np.int64),
    }


def prefixed(prefix: str, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {prefix + name: x for name, x in arrays.items()}


def unprefixed(prefix: str, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {name[len(prefix) :]: x for name, x in arrays.items() if name.startswith(prefix)}


def _sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _write_atomically(path: Path, parts: list[bytes]) -> None:
    """Write ``parts`` to a fresh file beside ``path``, flush it to disk, then rename it over ``path``."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        with open(tmp, "xb") as f:
            for part in parts:
                f.write(part)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


# ------------------------------------------------------------------ header schema


class _Optional:
    """Schema: None, or a value of ``inner``."""

    def __init__(self, inner: object):
        self.inner = inner


class _MapOf:
    """Schema: an object whose values all match ``inner``."""

    def __init__(self, inner: object):
        self.inner = inner


_NUMBER = "number"  # an int or a float
_INDENTER = {
    "nl": str,
    "indent": str,
    "dedent": str,
    "open": [str],
    "close": [str],
    "tab_len": int,
    "max_column": int,
    "line_start": bool,
}
_SEMICOLONS = {"nl": str, "semicolon": str, "after": [str]}
_TERMINAL = {
    "name": str,
    "pattern": str,
    "is_string": bool,
    "priority": int,
    "max_width": int,
    "value_len": int,
    "ignored": bool,
    "column": _Optional(int),
}
_HEADER = {
    "magic": str,
    "format": int,
    "library_version": str,
    "grammar": {
        "text": str,
        "text_sha256": str,
        "start": str,
        "source": str,
        "fingerprint": str,
        "indenter": _Optional(_INDENTER),
        "semicolons": _Optional(_SEMICOLONS),
    },
    "vocab": {"vocab_size": int, "eos_token_ids": [int], "fingerprint": str},
    "terminals": [_TERMINAL],
    "lalr": {"start_state": int, "end_state": int, "nonterminals": [str], "declared": _MapOf(int)},
    "preprocessed_subtrees": int,
    "timings": _MapOf(_NUMBER),
    "payload_sha256": str,
}


def _json_kind(value: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def _scalar_ok(value: object, schema: object) -> bool:
    if isinstance(value, bool):
        return schema is bool
    if schema is _NUMBER:
        return isinstance(value, (int, float))
    return isinstance(value, schema)  # type: ignore[arg-type]


def _field(where: str) -> str:
    return f"header field {where}" if where else "the header"


def _check_json(value: object, schema: object, where: str = "") -> None:
    """Raise Invalid unless ``value`` has exactly the fields and types ``schema`` names."""
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            raise Invalid(f"{_field(where)} must be an object, not {_json_kind(value)}")
        missing = [k for k in schema if k not in value]
        extra = [k for k in value if k not in schema]
        if missing or extra:
            what = [f"lacks {', '.join(missing)}"] * bool(missing) + [f"has unexpected {', '.join(extra)}"] * bool(extra)
            raise Invalid(f"{_field(where)} {' and '.join(what)}")
        for key, sub in schema.items():
            _check_json(value[key], sub, f"{where}.{key}" if where else key)
    elif isinstance(schema, list):
        if not isinstance(value, list):
            raise Invalid(f"{_field(where)} must be a list, not {_json_kind(value)}")
        for i, item in enumerate(value):
            _check_json(item, schema[0], f"{where}[{i}]")
    elif isinstance(schema, _Optional):
        if value is not None:
            _check_json(value, schema.inner, where)
    elif isinstance(schema, _MapOf):
        if not isinstance(value, dict):
            raise Invalid(f"{_field(where)} must be an object, not {_json_kind(value)}")
        for key, item in value.items():
            _check_json(item, schema.inner, f"{where}.{key}")
    elif not _scalar_ok(value, schema):
        name = "a number" if schema is _NUMBER else _json_kind(schema())  # type: ignore[operator]
        raise Invalid(f"{_field(where)} must be {name}, not {_json_kind(value)} {str(value)[:40]!r}")


def _parse_header(p: Path, line: bytes) -> dict:
    """The header line, checked: magic, format, then every field and its type."""
    try:
        header = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        header = None
    if not isinstance(header, dict) or header.get("magic") != MAGIC:
        raise ArtifactError(f"{str(p)!r} is not a greatgramma compiled grammar")
    if header.get("format") != FORMAT_VERSION:
        raise ArtifactError(
            f"{str(p)!r} has format {header.get('format')!r} (library {header.get('library_version')!r}); "
            f"this greatgramma {__version__} reads format {FORMAT_VERSION}: preprocess the grammar again"
        )
    try:
        _check_json(header, _HEADER)
    except Invalid as exc:
        raise ArtifactError(f"{str(p)!r} is malformed: {exc}") from None
    return header


def read_header(path: str | os.PathLike) -> dict:
    """The checked header of a compiled grammar (library version, grammar, vocabulary, sizes), without the tables."""
    p = Path(path)
    try:
        with open(p, "rb") as f:
            line = f.readline()
    except OSError as exc:
        raise ArtifactError(f"cannot read compiled grammar {str(p)!r}: {exc.strerror or exc}") from None
    return _parse_header(p, line)


# ------------------------------------------------------------------ arrays

ARRAYS: dict[str, tuple[type, int]] = {  # name -> (dtype, number of dimensions)
    "vocab_bytes": (np.uint8, 1),
    "vocab_lengths": (np.int64, 1),
    "lexer_delta": (np.int32, 2),
    "lexer_accept": (np.int32, 1),
    "lexer_prod": (np.bool_, 2),
    "lexer_accept_next": (np.int32, 2),
    "lexer_ext_state": (np.int32, 1),
    "lexer_ext_term": (np.int32, 1),
    "lexer_ext_pending": (np.uint8, 1),
    "lexer_ext_pending_lengths": (np.int64, 1),
    "lalr_action": (np.int32, 2),
    "lalr_goto": (np.int32, 2),
    "lalr_rule_lhs": (np.int32, 1),
    "lalr_rule_len": (np.int32, 1),
    "suffix": (np.int32, 1),
    "outcome_term": (np.int32, 1),
    "outcome_next": (np.int32, 1),
}


def _read_arrays(payload: bytes) -> dict[str, np.ndarray]:
    """The payload's arrays, each of the dtype and number of dimensions :data:`ARRAYS` names."""
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except Exception as exc:  # noqa: BLE001 - a damaged zip or .npy fails in many ways
        raise Invalid(f"the payload cannot be read ({type(exc).__name__}: {exc})") from None
    missing = sorted(set(ARRAYS) - set(arrays))
    extra = sorted(set(arrays) - set(ARRAYS))
    if missing or extra:
        raise Invalid(f"the payload lacks arrays {missing} and has unexpected arrays {extra}")
    for name, (dtype, ndim) in ARRAYS.items():
        x = arrays[name]
        if x.dtype != np.dtype(dtype) or x.ndim != ndim:
            raise Invalid(f"array {name} is {x.dtype} with shape {x.shape}; expected {np.dtype(dtype)} with {ndim} dimension(s)")
    return arrays


def _expect_shape(a: dict, name: str, shape: tuple[int, ...]) -> None:
    if a[name].shape != shape:
        raise Invalid(f"array {name} has shape {a[name].shape}, expected {shape}")


def _expect_range(a: dict, name: str, lo: int, hi: int, meaning: str) -> None:
    """Every value of ``a[name]`` in [lo, hi) (``meaning`` says what the bounds are)."""
    x = a[name]
    bad = (x < lo) | (x >= hi)
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        raise Invalid(f"array {name} holds {x[at]} at {at}, outside [{lo}, {hi}) ({meaning})")


# ------------------------------------------------------------------ what the arrays must satisfy


def _token_bytes(a: dict) -> list[bytes | None]:
    """The vocabulary's token bytes from vocab_lengths (-1: no bytes) and the concatenated vocab_bytes."""
    lengths = a["vocab_lengths"]
    _expect_range(a, "vocab_lengths", -1, len(a["vocab_bytes"]) + 1, "token byte lengths, -1 for none")
    ends = np.cumsum(np.maximum(lengths, 0))
    if (ends[-1] if len(ends) else 0) != len(a["vocab_bytes"]):
        raise Invalid(f"vocab_lengths add up to {int(ends[-1]) if len(ends) else 0}, vocab_bytes holds {len(a['vocab_bytes'])}")
    flat = a["vocab_bytes"].tobytes()
    return [None if n < 0 else flat[e - n : e] for n, e in zip(lengths.tolist(), ends.tolist())]


def _vocabulary(a: dict, vh: dict) -> Vocabulary:
    try:
        vocab = Vocabulary(_token_bytes(a), eos_token_ids=vh["eos_token_ids"], vocab_size=vh["vocab_size"])
    except GreatGrammaError as exc:
        raise Invalid(f"its vocabulary is invalid: {exc}") from None
    if vocab.fingerprint() != vh["fingerprint"]:
        raise Invalid("the vocabulary's token bytes and EOS ids do not match vocab.fingerprint")
    return vocab


def _grammar(gh: dict) -> Grammar:
    """The stored grammar, checked against its text hash and its fingerprint (text, start, indenter)."""
    if _sha256_text(gh["text"]) != gh["text_sha256"]:
        raise Invalid("grammar.text does not match grammar.text_sha256")
    indenter = None
    if gh["indenter"] is not None:
        try:
            indenter = Indenter(**gh["indenter"])
        except (TypeError, ValueError) as exc:
            raise Invalid(f"grammar.indenter is invalid: {exc}") from None
    semicolons = None if gh["semicolons"] is None else Semicolons(**gh["semicolons"])
    if indenter is not None and semicolons is not None:
        raise Invalid("grammar has both an indenter and semicolons")
    grammar = Grammar.from_saved(
        gh["text"], start=gh["start"], source=gh["source"], indenter=indenter, postlexer=semicolons
    )
    if grammar.fingerprint() != gh["fingerprint"]:
        raise Invalid("grammar.text, grammar.start and grammar.indenter do not match grammar.fingerprint")
    return grammar


def _terminals(header: dict, indenter: Indenter | None) -> tuple[TerminalSpec, ...]:
    """The terminals; with an indenter the newline's column copies 0..max_column come last."""
    terms = tuple(TerminalSpec(**t) for t in header["terminals"])
    base = [t for t in terms if t.column is None]
    names = [t.name for t in base]
    if len(set(names)) != len(names):
        raise Invalid("terminals repeat a name")
    copies = terms[len(base) :]
    if indenter is None:
        expected: list[tuple[str, int | None]] = []
    else:
        if indenter.nl not in names or base[names.index(indenter.nl)].ignored:
            raise Invalid(f"terminals lack the indenter's newline terminal {indenter.nl}")
        expected = [(indenter.nl, c) for c in range(indenter.max_column + 1)]
    if [(t.name, t.column) for t in copies] != expected:
        raise Invalid(
            "terminals: the newline's column copies must come last, one per column 0..max_column, "
            "and only with an indenter"
        )
    return terms


def _check_lexer(a: dict, terms: tuple[TerminalSpec, ...]) -> None:
    """Transitions and accepted terminals in range; the start state accepts nothing (no empty lexeme)."""
    n_terms = len(terms)
    q = a["lexer_delta"].shape[0]
    if q < 1:
        raise Invalid("lexer_delta has no states")
    for name, shape in (("lexer_delta", (q, 256)), ("lexer_accept", (q,)), ("lexer_accept_next", (q, 256))):
        _expect_shape(a, name, shape)
    _expect_shape(a, "lexer_prod", (q, n_terms))
    _expect_range(a, "lexer_delta", DEAD, q, "lexer states, -1 for none")
    _expect_range(a, "lexer_accept", DEAD, n_terms, "terminals, -1 for none")
    _expect_range(a, "lexer_accept_next", DEAD, n_terms, "terminals, -1 for none")
    if a["lexer_accept"][0] != DEAD or (a["lexer_accept_next"][0] != DEAD).any():
        raise Invalid("the lexer's start state accepts a terminal (an empty lexeme)")
    n_ext = len(a["lexer_ext_state"])
    for name in ("lexer_ext_term", "lexer_ext_pending_lengths"):
        _expect_shape(a, name, (n_ext,))
    _expect_range(a, "lexer_ext_pending_lengths", 0, MAX_BACKTRACK + 1, "pending bytes of a fallback")
    if int(a["lexer_ext_pending_lengths"].sum()) != len(a["lexer_ext_pending"]):
        raise Invalid("lexer_ext_pending_lengths do not add up to the length of lexer_ext_pending")


def _check_lalr(a: dict, lalr: dict, terms: tuple[TerminalSpec, ...], indenter: Indenter | None) -> None:
    """Shapes follow the terminals and nonterminals; actions, gotos and rules index what exists."""
    n_base = sum(t.column is None for t in terms)
    declared = lalr["declared"]
    want = {} if indenter is None else {indenter.indent, indenter.dedent}
    if set(declared) != set(want) or sorted(declared.values()) != list(range(n_base, n_base + len(declared))):
        raise Invalid(
            f"lalr.declared must give {sorted(want) or 'no terminals'} the ids after the {n_base} lexer terminals"
        )
    s = a["lalr_action"].shape[0]
    n_rules, n_nonterms = len(a["lalr_rule_lhs"]), len(lalr["nonterminals"])
    if s < 1:
        raise Invalid("lalr_action has no states")
    _expect_shape(a, "lalr_action", (s, n_base + len(declared) + 1))
    _expect_shape(a, "lalr_goto", (s, max(n_nonterms, 1)))
    _expect_shape(a, "lalr_rule_len", (n_rules,))
    _expect_range(a, "lalr_action", -1 - n_rules, s, "shift to a state, -1 error, -2 - r reduce by rule r")
    _expect_range(a, "lalr_goto", -1, s, "parser states, -1 for none")
    _expect_range(a, "lalr_rule_lhs", 0, n_nonterms, "nonterminals")
    _expect_range(a, "lalr_rule_len", 0, 2**31 - 1, "rule lengths")
    for key in ("start_state", "end_state"):
        if not 0 <= lalr[key] < s:
            raise Invalid(f"lalr.{key} {lalr[key]} is not a parser state (0..{s - 1})")


def _check_outcomes(a: dict, trie: TokenTrie, terms: tuple[TerminalSpec, ...], num_lexer_states: int) -> None:
    """Suffix rows (one per byte position of the vocabulary's token strings) name outcome rows or
    are not computed yet; an outcome row emits a parser-visible terminal and links to an earlier
    row (so following links ends), or ends (END) in a lexer state, extended ones included."""
    n_rows = len(a["outcome_term"])
    _expect_shape(a, "outcome_next", (n_rows,))
    _expect_shape(a, "suffix", (int(trie.offsets[-1]),))
    suffix = a["suffix"]
    _expect_range({"suffix": np.where(suffix == UNKNOWN, DEAD, suffix)}, "suffix", DEAD, n_rows,
                  f"outcome rows, {DEAD} for none, {UNKNOWN} for not computed")
    term, nxt = a["outcome_term"].astype(np.int64), a["outcome_next"].astype(np.int64)
    visible = np.array([not t.ignored for t in terms] + [False], dtype=bool)
    is_end = term == END
    bad_term = ~is_end & ~visible[np.where((term >= 0) & (term < len(terms)), term, len(terms))]
    bad_next = np.where(is_end, (nxt < 0) | (nxt >= num_lexer_states), (nxt < 0) | (nxt >= np.arange(n_rows)))
    for bad, what in ((bad_term, "a terminal that is not a parser-visible one"), (bad_next, "a link out of range")):
        if bad.any():
            o = int(np.argmax(bad))
            raise Invalid(
                f"outcome row {o} (terminal {int(term[o])}, next {int(nxt[o])}) has {what} "
                f"({num_lexer_states} lexer states; rows link to earlier rows)"
            )


# ------------------------------------------------------------------ load


@contextmanager
def building(what: str) -> Iterator[None]:
    """A safety net over the checks: an error while building ``what`` from checked arrays is still
    reported as a malformed file, never as a deep exception."""
    try:
        yield
    except Invalid:
        raise
    except (ValueError, TypeError, IndexError, KeyError, ArithmeticError) as exc:
        raise Invalid(f"cannot build the {what} from it ({type(exc).__name__}: {exc})") from None


class Stored(NamedTuple):
    """A compiled grammar's file, read and checked: what :func:`greatgramma.compiled.load` builds from."""

    path: Path
    header: dict
    arrays: dict[str, np.ndarray]
    grammar: Grammar  # as stored (the one given to ``read``, if any, has the same fingerprint)
    vocab: Vocabulary
    terminals: tuple[TerminalSpec, ...]
    trie: TokenTrie  # the vocabulary's (shared with every grammar compiled for it in this process)


def read(path: str | os.PathLike, *, grammar: Grammar | None = None, vocab: Vocabulary | None = None) -> Stored:
    """Read a compiled grammar's file and check everything it claims (module docstring); if
    ``grammar`` or ``vocab`` is given, refuse a file made for others. ArtifactError otherwise."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ArtifactError(f"cannot read compiled grammar {str(p)!r}: {exc.strerror or exc}") from None
    line, sep, payload = raw.partition(b"\n")
    header = _parse_header(p, line if sep else b"")
    if hashlib.sha256(payload).hexdigest() != header["payload_sha256"]:
        raise ArtifactError(f"{str(p)!r} is corrupted (checksum mismatch): preprocess the grammar again")
    gh, vh = header["grammar"], header["vocab"]
    if grammar is not None and grammar.fingerprint() != gh["fingerprint"]:
        raise ArtifactError(f"{str(p)!r} was compiled from another grammar ({gh['source']})")
    if vocab is not None and vocab.fingerprint() != vh["fingerprint"]:
        raise ArtifactError(f"{str(p)!r} was compiled for another tokenizer or vocabulary size")
    try:
        return _checked(p, header, _read_arrays(payload), vocab)
    except Invalid as exc:
        raise malformed(p, exc) from None


def malformed(path: Path, exc: Invalid) -> ArtifactError:
    """The error for a file whose tables do not hold together."""
    return ArtifactError(f"{str(path)!r} is malformed: {exc}")


def _checked(p: Path, header: dict, a: dict, vocab: Vocabulary | None) -> Stored:
    """Check the arrays against the header and each other."""
    stored = _grammar(header["grammar"])
    if vocab is None:
        vocab = _vocabulary(a, header["vocab"])
    elif tuple(_token_bytes(a)) != vocab.token_bytes:
        raise Invalid("its vocabulary arrays differ from the given vocabulary, whose fingerprint it names")
    terms = _terminals(header, stored.indenter)
    _check_lexer(a, terms)
    _check_lalr(a, header["lalr"], terms, stored.indenter)
    trie = trie_of(vocab)
    _check_outcomes(a, trie, terms, a["lexer_delta"].shape[0] + len(a["lexer_ext_state"]))
    if header["preprocessed_subtrees"] < 0:
        raise Invalid("preprocessed_subtrees is negative")
    with building("timings"):
        header["timings"] = {k: float(v) for k, v in header["timings"].items()}
    return Stored(p, header, a, stored, vocab, terms, trie)


def differences(stored: Stored, fresh_arrays: dict, fresh_header: dict) -> list[str]:
    """What differs between a file and the tables its grammar and vocabulary compile to now
    (eagerly: every suffix row computed).

    Lark numbers LALR states, rules and nonterminals differently from one run to the next, so the
    parse tables are compared as automata (:func:`canonical_lalr`). Outcome rows and extended
    lexer states are numbered in the order decoding met them, so the suffix rows the file holds
    are compared by what they mean (terminals, end state); all other tables exactly.
    """
    a, header = stored.arrays, stored.header
    skip = ("lexer_ext_", "lalr_", "outcome_", "suffix")
    differ = [name for name in fresh_arrays if not name.startswith(skip) and not np.array_equal(fresh_arrays[name], a[name])]
    if not _same_suffix_rows(a, fresh_arrays):
        differ.append("suffix, outcome_*, lexer_ext_* (the token transducer's rows)")
    tables = [ParseTable.from_arrays(unprefixed("lalr_", x), h["lalr"]) for x, h in ((fresh_arrays, fresh_header), (a, header))]
    if canonical_lalr(tables[0]) != canonical_lalr(tables[1]):
        differ.append("lalr_* (the parse table)")
    if header["terminals"] != fresh_header["terminals"]:
        differ.append("header terminals")
    if header["lalr"]["declared"] != fresh_header["lalr"]["declared"]:
        differ.append("header lalr.declared")
    return differ


def _same_suffix_rows(stored: dict, fresh: dict) -> bool:
    """The file's computed suffix rows mean what the fresh ones at the same positions mean."""
    meanings: dict[tuple, int] = {}
    ids = [_row_meanings(x, meanings) for x in (stored, fresh)]
    known = stored["suffix"] != UNKNOWN
    rows = [x["suffix"][known].astype(np.int64) for x in (stored, fresh)]
    if (rows[1] == UNKNOWN).any():
        return False
    said = [np.where(r == DEAD, DEAD, m[np.maximum(r, 0)]) for r, m in zip(rows, ids)]
    return bool(np.array_equal(*said))


def _row_meanings(a: dict, meanings: dict[tuple, int]) -> np.ndarray:
    """Per outcome row, the id in ``meanings`` of (terminals, end state), extended states by their key."""
    keys = LexingTransducer.extended_keys_from_arrays(unprefixed("lexer_", a))
    num_dfa = a["lexer_delta"].shape[0]
    term, nxt = a["outcome_term"].tolist(), a["outcome_next"].tolist()
    rows: list[tuple] = []
    for t, n in zip(term, nxt):  # rows link to earlier rows
        rows.append(((), n if n < num_dfa else keys[n - num_dfa]) if t == END else ((t, *rows[n][0]), rows[n][1]))
    return np.array([meanings.setdefault(r, len(meanings)) for r in rows] + [0], dtype=np.int64)  # (+1: never empty)


def canonical_lalr(table: ParseTable) -> tuple:
    """The parse table with its numbering taken out: states renumbered breadth first from the start
    (successors by terminal id, then by nonterminal name), reductions named by (nonterminal, length)."""
    action, goto = table.action.tolist(), table.goto.tolist()
    names, lhs, rlen = table.nonterminals, table.rule_lhs.tolist(), table.rule_len.tolist()
    by_name = sorted(range(len(names)), key=names.__getitem__)
    order = {table.start_state: 0}
    queue = [table.start_state]
    for s in queue:
        for nxt in [a for a in action[s] if a >= 0] + [goto[s][j] for j in by_name if goto[s][j] >= 0]:
            if nxt not in order:
                order[nxt] = len(order)
                queue.append(nxt)
    if table.end_state not in order:
        order[table.end_state] = len(order)
        queue.append(table.end_state)

    def act(a: int) -> tuple:
        if a >= 0:
            return ("shift", order[a])
        return ("error",) if a == -1 else ("reduce", names[lhs[-2 - a]], rlen[-2 - a])

    rows = [
        (tuple(act(a) for a in action[s]), tuple((names[j], order[goto[s][j]]) for j in by_name if goto[s][j] >= 0))
        for s in queue
    ]
    return order[table.end_state], rows
