"""Hostile inputs over the shipped grammars x real tokenizers: partial UTF-8, byte-fallback and
control-character tokens, keywords and identifiers followed by lead bytes.

Walks that prefer those tokens must never reach a dead end (an empty mask), every output they
end with EOS must parse with Lark, and after each partial-UTF-8 token the whole mask must equal
the reference checker's. A second test goes through every (lexer state, lead byte) pair, in
contexts from the benchmark programs (eval/data/programs).
"""

from __future__ import annotations

import random
from collections import deque
from functools import lru_cache
from pathlib import Path

import lark
import numpy as np
import pytest
from helpers import BENCH_GRAMMARS as GRAMMARS
from helpers import allowed_ids, bit, compile_shipped, grammar_text
from helpers import TOKENIZER_NAMES as TOKENIZERS
from lark_indenter import lark_parser, python_indenter
from reference import ReferenceChecker

import greatgramma as gg

LEAD_BYTES = range(0xC2, 0xF5)
CONTEXTS_PER_STATE = 2
PY_REF_INDENTER = dict(nl="_NL", open=("LPAR", "LSQB", "LBRACE"), close=("RPAR", "RSQB", "RBRACE"), tab_len=8, max_column=64, line_start=True)

pytestmark = pytest.mark.real_tokenizers


@lru_cache(maxsize=1)  # one cell in memory at a time
def masker_for(grammar: str, vocab: gg.Vocabulary) -> gg.Masker:
    return gg.Masker(compile_shipped(grammar, vocab))


@lru_cache(maxsize=4)
def reference_for(grammar: str) -> ReferenceChecker:
    return ReferenceChecker(grammar_text(grammar), indenter=PY_REF_INDENTER if grammar == "python" else None)


def lark_for(grammar: str) -> lark.Lark:
    if grammar == "python":
        return lark_parser(grammar_text(grammar), python_indenter())
    return lark.Lark(grammar_text(grammar), parser="lalr", lexer="basic")


def unfinished(data: bytes) -> bool:
    """Ends inside a UTF-8 character, or starts with bytes that continue one."""
    try:
        data.decode("utf-8")
        return False
    except UnicodeDecodeError:
        return True


class Kinds:
    """The hostile kinds of a vocabulary's tokens, as boolean arrays over token ids."""

    def __init__(self, vocab: gg.Vocabulary) -> None:
        n = vocab.vocab_size
        self.partial, self.control, self.word, self.lead = (np.zeros(n, dtype=bool) for _ in range(4))
        for t, b in enumerate(vocab.token_bytes):
            if not b:
                continue
            self.partial[t] = unfinished(b)
            self.control[t] = any(c < 0x20 and c not in (0x0A, 0x09, 0x20) for c in b) or b"\r" in b
            self.word[t] = b.strip().isalnum() and b.strip().isascii()
            self.lead[t] = 0xC2 <= b[-1] <= 0xF4 or (len(b) > 1 and 0xE0 <= b[-2] <= 0xF4)


@lru_cache(maxsize=1)
def kinds_for(vocab: gg.Vocabulary) -> Kinds:
    return Kinds(vocab)


def pick(rng: random.Random, ok: np.ndarray, kinds: Kinds, after_word: bool) -> int:
    """A token from ``ok``, preferring the hostile kinds (a lead byte right after a word)."""
    preferred = [(0.6 if after_word else 0.1, kinds.lead), (0.3, kinds.partial), (0.15, kinds.control), (0.2, kinds.word)]
    for p, kind in preferred:
        choice = ok[kind[ok]]
        if len(choice) and rng.random() < p:
            return int(rng.choice(choice.tolist()))
    return int(rng.choice(ok.tolist()))


CELLS = [(g, t) for g in GRAMMARS for t in TOKENIZERS]
WALKS, STEPS = 6, 60


@pytest.mark.parametrize("grammar,tokenizer", CELLS)
def test_hostile_walks(grammar: str, tokenizer: str, vocabularies) -> None:
    masker = masker_for(grammar, vocabularies(tokenizer))
    vocab, kinds = masker.compiled.vocab, kinds_for(masker.compiled.vocab)
    eos = set(vocab.eos_token_ids)
    ref = reference_for(grammar)
    compared = 0
    for seed in range(WALKS):
        rng, state, out, after_word = random.Random(seed), masker.initial_state(), b"", False
        for step in range(STEPS):
            words = masker.mask(state)
            ok = allowed_ids(words)
            assert len(ok), f"{grammar}/{tokenizer} seed {seed}: dead end after {out[-80:]!r}"
            ok_eos = [t for t in ok.tolist() if t in eos]
            if ok_eos and (rng.random() < 0.1 or step == STEPS - 1):
                final = masker.advance(state, ok_eos[0])
                assert masker.is_complete(state) and not masker.is_complete(final)
                check_parses(grammar, out, ref)
                break
            ok = np.array([t for t in ok.tolist() if t not in eos])
            tok = pick(rng, ok, kinds, after_word)
            tb = vocab.token_bytes[tok]
            state = masker.advance(state, tok)
            out += tb
            after_word = kinds.word[tok]
            if kinds.partial[tok] and unfinished(out) and compared < 2 and vocab.vocab_size <= 40_000:
                compare_with_reference(masker, state, ref, out)  # full-vocabulary reference: 32K only
                compared += 1


def check_parses(grammar: str, out: bytes, ref: ReferenceChecker) -> None:
    """An output that ended with EOS parses with Lark (or, where Lark's lexer tries terminals in
    priority order and our longest-match contract lexes otherwise, is complete for the reference)."""
    try:
        lark_for(grammar).parse(out.decode("utf-8"))
    except (lark.exceptions.LarkError, UnicodeDecodeError) as exc:
        assert ref.complete(out), f"{grammar}: EOS allowed but Lark and the reference reject {out!r}: {exc}"


def compare_with_reference(masker: gg.Masker, state: gg.State, ref: ReferenceChecker, out: bytes) -> None:
    vocab = masker.compiled.vocab
    got = np.zeros(vocab.vocab_size, dtype=bool)
    got[allowed_ids(masker.mask(state))] = True
    want = np.zeros(vocab.vocab_size, dtype=bool)
    want[: len(vocab.token_bytes)] = ref.allowed(out, vocab.token_bytes)
    for e in vocab.eos_token_ids:
        want[e] = ref.complete(out)
    diff = np.nonzero(got != want)[0][:5].tolist()
    assert not diff, f"after {out[-60:]!r}: engine and reference differ on " + ", ".join(
        f"{t} {vocab.token_bytes[t]!r} (engine {got[t]})" for t in diff
    )


# ---------------------------------------------------------------- every (lexer state, lead byte)


def witnesses(lexer) -> dict[int, bytes]:
    """A shortest byte string from the start state to each DFA state, printable ASCII preferred."""
    order = [*range(0x61, 0x7B), *range(0x30, 0x3A), *range(0x20, 0x7F), *range(256)]
    order = list(dict.fromkeys(order))
    found, todo = {0: b""}, deque([0])
    while todo:
        q = todo.popleft()
        for b in order:
            r = int(lexer.delta[q, b])
            if r >= 0 and r not in found:
                found[r] = found[q] + bytes((b,))
                todo.append(r)
    return found


def program_contexts(programs: list[Path], per_program: int = 150) -> list[list[bytes]]:
    """Per benchmark program, its prefixes that end between two lexemes (after whitespace or an
    opening bracket or comma)."""
    out = []
    for path in programs:
        text = path.read_bytes()
        ends = [i + 1 for i in range(len(text)) if text[i : i + 1] in (b" ", b"\n", b"(", b"[", b"{", b",")]
        out.append([b""] + [text[:i] for i in ends[:per_program]])
    return out


def byte_classes(lexer, candidates) -> list[list[int]]:
    """The candidate bytes grouped by how every lexer state treats them (transition, lookahead)."""
    groups: dict[bytes, list[int]] = {}
    for b in candidates:
        groups.setdefault(lexer.delta[:, b].tobytes() + lexer.accept_next[:, b].tobytes(), []).append(b)
    return list(groups.values())


def byte_token(vocab: gg.Vocabulary) -> dict[int, int]:
    """Token id of each single byte (byte-level and byte-fallback vocabularies have all 256)."""
    out: dict[int, int] = {}
    for t, b in enumerate(vocab.token_bytes):
        if b is not None and len(b) == 1:
            out.setdefault(b[0], t)
    return out


def feed_bytes(masker: gg.Masker, state: gg.State, data: bytes, by_byte: dict[int, int]) -> gg.State | None:
    for b in data:
        try:
            state = masker.advance(state, by_byte[b])
        except gg.TokenRejectedError:
            return None
    return state


@pytest.mark.parametrize("grammar", GRAMMARS)
def test_every_lexer_state_and_lead_byte(grammar: str, vocabularies, bench_programs) -> None:
    """For each DFA state, reached in some program context: each lead byte's token is allowed
    exactly when the reference finds the prefix viable (asked for one byte, varied, of each
    class of lead bytes the lexer treats alike), and once taken the mask is not empty."""
    ref = reference_for(grammar)
    programs = bench_programs(grammar)
    masker = masker_for(grammar, vocabularies("llama2"))  # bytes decide here; the walks above cover every tokenizer
    lexer, by_byte = masker.compiled.lexer, byte_token(masker.compiled.vocab)
    cols = lexer.columns
    reach = witnesses(lexer)
    states = sorted(reach)
    if cols is not None:  # with an indenter: one state per base state (the column copies lex alike)
        states = sorted({int(cols.state_base[q]): q for q in states}.values())
    starts: list[tuple[bytes, gg.State]] = []
    for prefixes in program_contexts(programs):
        state, done = masker.initial_state(), b""
        for ctx in prefixes:
            state = feed_bytes(masker, state, ctx[len(done):], by_byte)
            assert state is not None, f"{grammar}: benchmark program prefix rejected: {ctx[-60:]!r}"
            done = ctx
            starts.append((ctx, state))
    starts.sort(key=lambda item: len(item[0]))
    ref_states: dict[bytes, object] = {}
    rng = random.Random(0)
    lead_classes = byte_classes(lexer, LEAD_BYTES)
    uncovered, checked = [], 0
    for q in states:
        w = reach[q]
        # the shortest context that reaches q, then others: the parser context decides too
        shortest, others = starts[:30], rng.sample(starts, min(60, len(starts)))
        contexts_left = CONTEXTS_PER_STATE
        for i, (ctx, start) in enumerate(shortest + others):
            if i < len(shortest) and contexts_left < CONTEXTS_PER_STATE:
                continue  # one short context, then the others from all over the programs
            st = feed_bytes(masker, start, w, by_byte)
            if st is None or lexer.base(st.lexer) != q:
                continue
            words = masker.mask(st)
            before = ref_states.get(ctx)
            if before is None:
                before = ref_states[ctx] = ref.lex_state(ctx)
            before = ref.feed(before, w)
            base = (len(before.lexemes), ref._post(before.lexemes))  # what state_viable would recompute per byte
            for members in lead_classes:
                asked = rng.choice(members)  # the reference is slow: one byte per class, varied
                for b in members:
                    tok = by_byte[b]
                    engine = bit(words, tok)
                    if b == asked:
                        want = ref.state_viable(ref.feed(before, bytes((b,))), base)
                    else:  # the lexer cannot tell the bytes of a class apart
                        want = bit(words, by_byte[asked])
                    assert engine == want, f"{grammar}: after {(ctx + w)[-50:]!r} lead byte {b:#x}: engine {engine}, reference {want}"
                    if engine:
                        after = masker.advance(st, tok)
                        assert masker.mask(after).any(), f"{grammar}: dead end after {(ctx + w)[-50:]!r} + {b:#x}"
                    checked += 1
            contexts_left -= 1
            if not contexts_left:
                break
        if contexts_left == CONTEXTS_PER_STATE:
            uncovered.append(q)
    assert len(uncovered) <= len(states) // 10, f"{grammar}: {len(uncovered)} of {len(states)} lexer states not reached"
    assert checked


# ---------------------------------------------------------------- the reported dead ends


@pytest.mark.parametrize(
    "tokenizer,prefix,pieces",
    [
        ("llama3", b"", [b" assigned", b"\tif", b"\xdb"]),  # ids 12893, 748, 151 in the report
        ("llama3", b'x = a!=""and', [b"\xef", b"\xbc"]),
        ("llama2", b'x = a!=""and', [b"\xef", b"\xbc"]),
    ],
)
def test_keyword_then_lead_byte_is_refused(tokenizer: str, prefix: bytes, pieces: list[bytes], vocabularies) -> None:
    """After a keyword where a NAME cannot follow, a lead byte is refused: a letter would make
    the lexeme a NAME, any other character backs up to the keyword and then starts nothing."""
    masker = masker_for("python", vocabularies(tokenizer))
    vocab, by_byte = masker.compiled.vocab, byte_token(masker.compiled.vocab)
    state = feed_bytes(masker, masker.initial_state(), prefix, by_byte)
    assert state is not None
    ref, out = reference_for("python"), prefix
    for piece in pieces:
        tok = vocab.token_bytes.index(piece)
        allowed = bit(masker.mask(state), tok)
        assert allowed == ref.viable(out + piece), f"{piece!r} after {out!r}"
        if not allowed:
            return
        state, out = masker.advance(state, tok), out + piece
        assert masker.mask(state).any(), f"dead end after {out!r}"
    pytest.fail(f"every piece was allowed: {out!r}")
