"""The compiled-grammar file: a versioned, checksummed container of the preprocessing tables.

Layout: one JSON header line (format, library version, fingerprints of grammar and vocabulary,
sha256 of the payload), then an uncompressed ``.npz`` payload with every array. Loading checks
all of it before anything is built, so a damaged or mismatched file is an error, never a
wrong mask.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from dataclasses import asdict
from pathlib import Path

import numpy as np

from .compiled import CompiledGrammar
from .errors import ArtifactError
from .grammar import Grammar
from .indenter import IndentedTable, Indenter
from .lexer import LexerDFA, TerminalSpec
from .parser import ParseTable
from .transducer import TokenTransducer, TokenTrie
from .vocab import Vocabulary

MAGIC = "greatgramma-compiled"
FORMAT_VERSION = 3


def _library_version() -> str:
    from . import __version__

    return __version__


def save(compiled: CompiledGrammar, path: str | os.PathLike) -> None:
    """Write ``compiled`` to ``path`` (see the module docstring for the layout)."""
    g, v, lx, pt, trie, td = (
        compiled.grammar,
        compiled.vocab,
        compiled.lexer,
        compiled.parse_table,
        compiled.trie,
        compiled.transducer,
    )
    lalr = pt.table if isinstance(pt, IndentedTable) else pt
    lengths = np.array([-1 if b is None else len(b) for b in v.token_bytes], dtype=np.int64)
    arrays = {
        "vocab_bytes": np.frombuffer(b"".join(b for b in v.token_bytes if b is not None), dtype=np.uint8),
        "vocab_lengths": lengths,
        "lexer_delta": lx.delta,
        "lexer_accept": lx.accept,
        "lexer_prod": lx.prod,
        "lexer_accept_next": lx.accept_next,
        "lalr_action": lalr.action,
        "lalr_goto": lalr.goto,
        "lalr_rule_lhs": lalr.rule_lhs,
        "lalr_rule_len": lalr.rule_len,
        "trie_matrix": trie.matrix,
        "trie_lengths": trie.lengths,
        "trie_offsets": trie.offsets,
        "trie_levels": np.concatenate(trie.level_starts) if trie.level_starts else np.zeros(0, np.int64),
        "trie_level_sizes": np.array([len(x) for x in trie.level_starts], dtype=np.int64),
        "trie_token_ptr": trie.token_of_string_ptr,
        "trie_tokens": trie.token_of_string,
        "suffix": td.suffix.astype(np.int32),
        "outcome_term": np.array(td.outcomes.term, dtype=np.int32),
        "outcome_next": np.array(td.outcomes.next, dtype=np.int32),
    }
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    payload = buf.getvalue()
    header = {
        "magic": MAGIC,
        "format": FORMAT_VERSION,
        "library_version": _library_version(),
        "grammar": {
            "text": g.text,
            "start": g.start,
            "source": g.source,
            "fingerprint": g.fingerprint(),
            "indenter": g.indenter.to_dict() if g.indenter is not None else None,
        },
        "vocab": {"vocab_size": v.vocab_size, "eos_token_ids": list(v.eos_token_ids), "fingerprint": v.fingerprint()},
        "terminals": [asdict(t) for t in lx.terminals],
        "lalr": {
            "start_state": lalr.start_state,
            "end_state": lalr.end_state,
            "nonterminals": list(lalr.nonterminals),
            "declared": lalr.declared,
        },
        "timings": compiled.timings,
        "payload_sha256": hashlib.sha256(payload).hexdigest(),
    }
    with open(path, "wb") as f:
        f.write(json.dumps(header).encode("utf-8") + b"\n")
        f.write(payload)


def load(
    path: str | os.PathLike,
    *,
    grammar: Grammar | None = None,
    vocab: Vocabulary | None = None,
) -> CompiledGrammar:
    """Read a compiled grammar; if ``grammar`` or ``vocab`` is given, refuse a file made for others."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ArtifactError(f"cannot read compiled grammar {str(p)!r}: {exc.strerror or exc}") from None
    line, sep, payload = raw.partition(b"\n")
    try:
        header = json.loads(line) if sep else None
    except (UnicodeDecodeError, json.JSONDecodeError):
        header = None
    if not isinstance(header, dict) or header.get("magic") != MAGIC:
        raise ArtifactError(f"{str(p)!r} is not a greatgramma compiled grammar")
    if header.get("format") != FORMAT_VERSION:
        raise ArtifactError(
            f"{str(p)!r} has format {header.get('format')} (library {header.get('library_version')}); "
            f"this greatgramma {_library_version()} reads format {FORMAT_VERSION}: preprocess the grammar again"
        )
    if hashlib.sha256(payload).hexdigest() != header.get("payload_sha256"):
        raise ArtifactError(f"{str(p)!r} is corrupted (checksum mismatch): preprocess the grammar again")
    gh, vh = header["grammar"], header["vocab"]
    if grammar is not None and grammar.fingerprint() != gh["fingerprint"]:
        raise ArtifactError(f"{str(p)!r} was compiled from another grammar ({gh['source']})")
    if vocab is not None and vocab.fingerprint() != vh["fingerprint"]:
        raise ArtifactError(f"{str(p)!r} was compiled for another tokenizer or vocabulary size")
    try:
        a = dict(np.load(io.BytesIO(payload), allow_pickle=False))
    except Exception as exc:  # a damaged zip can fail in many ways; the checksum passed, so this is a bug
        raise ArtifactError(f"{str(p)!r} cannot be read: {exc}") from None

    if vocab is None:
        lengths, flat = a["vocab_lengths"], a["vocab_bytes"].tobytes()
        ends = np.cumsum(np.maximum(lengths, 0))
        token_bytes = [None if n < 0 else flat[e - n : e] for n, e in zip(lengths.tolist(), ends.tolist())]
        vocab = Vocabulary(token_bytes, eos_token_ids=vh["eos_token_ids"], vocab_size=vh["vocab_size"])
        if vocab.fingerprint() != vh["fingerprint"]:
            raise ArtifactError(f"{str(p)!r} is corrupted (vocabulary fingerprint mismatch)")
    ind = Indenter(**gh["indenter"]) if gh.get("indenter") else None
    if grammar is None:
        grammar = Grammar._from_artifact(gh["text"], start=gh["start"], source=gh["source"], indenter=ind)
    terminals = tuple(TerminalSpec(**t) for t in header["terminals"])
    tab_len = ind.tab_len if ind is not None else 8
    lexer = LexerDFA(a["lexer_delta"], a["lexer_accept"], a["lexer_prod"], terminals, a["lexer_accept_next"], tab_len)
    lalr = header["lalr"]
    table = ParseTable(
        a["lalr_action"],
        a["lalr_goto"],
        a["lalr_rule_lhs"],
        a["lalr_rule_len"],
        lalr["start_state"],
        lalr["end_state"],
        tuple(lalr["nonterminals"]),
        dict(lalr.get("declared", {})),
    )
    if ind is not None:
        table = IndentedTable(table, ind, [t.name for t in terminals if t.column is None])
    offsets, flat = a["trie_offsets"], a["trie_matrix"]
    lengths = a["trie_lengths"]
    strings = tuple(flat[i, :n].tobytes() for i, n in enumerate(lengths.tolist()))
    levels = tuple(np.split(a["trie_levels"], np.cumsum(a["trie_level_sizes"])[:-1]))
    trie = TokenTrie(strings, flat, lengths, offsets, levels, a["trie_token_ptr"], a["trie_tokens"])
    transducer = TokenTransducer(lexer, trie, saved=(a["suffix"], a["outcome_term"], a["outcome_next"]))
    return CompiledGrammar(grammar, vocab, lexer, table, trie, transducer, dict(header.get("timings", {})))
