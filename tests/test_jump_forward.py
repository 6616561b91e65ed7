"""Jump-forward: forced bytes against the reference checker, fast-forward tokens (accepted, spelling a
prefix of the forced bytes, withheld by llguidance's rule), and the language left unchanged.

The reference's forced bytes are found independently: from a prefix, probe the 256 single bytes
with ``ReferenceChecker.viable``; while exactly one is viable and the prefix is not complete,
append it.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from helpers import EOS_ID, GRAMMARS, PAD_IDS, TEST_DATA, engine_bits, require_tokenizer
from hypothesis import event, given, settings
from hypothesis import strategies as st
from reference import ReferenceChecker
from test_properties import SETTINGS, examples, grammars, usable, vocabularies

import greatgramma as gg
from greatgramma.jump_forward import MAX_FORCED_BYTES, ff_tokens, forced_bytes, greedy_tokenize
from greatgramma.tokenize import bytes_tokenizer, encode_exact

# Grammars that force text: keywords, fixed keys, a choice inside a UTF-8 character, a loop.
FORCING = [
    'start: "true" | "false" | "null"\n',
    'start: "{" "\\"" ("orderId" | "orderName") "\\"" ":" NUM "}"\nNUM: /[0-9]+/\n%ignore " "\n',
    'start: "é" | "è" | "aé"\n',
    'start: "{" "\\"" ("orderId" | "orderName") "\\"" ":" NUM "}"\nNUM: /[0-9]+/\n',
    'start: "let" NAME "=" NAME ";"\nNAME: /[a-c]+/\n%ignore " "\n',
    'start: "ab" start | "c"\n',
]
BYTE_TOKENS = [None] + [bytes([b]) for b in range(256)]  # id 0 EOS, id b+1 the byte b


def byte_id(b: int) -> int:
    return b + 1


@functools.lru_cache(maxsize=64)
def byte_masker(text: str) -> gg.Masker:
    vocab = gg.Vocabulary.from_token_bytes(BYTE_TOKENS, eos_token_ids=[EOS_ID])
    return gg.Masker(gg.compile(gg.Grammar(text), vocab))


@functools.lru_cache(maxsize=64)
def reference(text: str) -> ReferenceChecker:
    return ReferenceChecker(text)


def reference_forced(ref: ReferenceChecker, prefix: bytes, limit: int = 64) -> bytes:
    out = b""
    while len(out) < limit and not ref.complete(prefix + out):
        nxt = [b for b in range(256) if ref.viable(prefix + out + bytes([b]))]
        if len(nxt) != 1:
            break
        out += bytes(nxt)
    return out


# ---------------------------------------------------------------------------------------------
# forced bytes


@settings(max_examples=examples(120), **SETTINGS)
@given(data=st.data())
def test_forced_bytes_equal_reference(data) -> None:
    """Byte walks over random and forcing grammars: the engine's forced bytes are the reference's."""
    text = data.draw(st.one_of(st.sampled_from(FORCING), grammars()), label="grammar")
    if text in FORCING:
        ref = reference(text)
    else:
        ref = usable(text)[1]
    masker = byte_masker(text)
    state, prefix = masker.initial_state(), b""
    for _ in range(data.draw(st.integers(1, 8), label="steps")):
        got = forced_bytes(masker, state, max_bytes=64)
        assert got == reference_forced(ref, prefix), prefix
        if got:
            event("forced bytes")
        viable = [b for b in range(256) if ref.viable(prefix + bytes([b]))]
        if not viable:
            break
        b = data.draw(st.sampled_from(viable), label="byte")
        state, prefix = masker.advance(state, byte_id(b)), prefix + bytes([b])


@settings(max_examples=examples(120), **SETTINGS)
@given(data=st.data())
def test_ff_tokens_are_safe_and_keep_the_language(data) -> None:
    """Token walks over random grammars and vocabularies: every allowed token agrees with the
    forced bytes, EOS is refused before them, ff tokens are accepted, spell a prefix of them,
    respect the withholding rule, and leave the reference's mask unchanged."""
    text = data.draw(st.one_of(st.sampled_from(FORCING), grammars()), label="grammar")
    if text in FORCING:
        g, ref = gg.Grammar(text), reference(text)
    else:
        g, ref = usable(text)
    tokens = data.draw(vocabularies(text), label="tokens")
    tokens += [bytes([b]) for b in b"truefalsenl{}\":0123456789orderIdName" if bytes([b]) not in tokens]
    vocab_size = len(tokens) + PAD_IDS
    vocab = gg.Vocabulary.from_token_bytes(tokens, eos_token_ids=[EOS_ID], vocab_size=vocab_size)
    masker = gg.Masker(gg.compile(g, vocab))
    max_tokens = data.draw(st.integers(0, 4), label="max_tokens")
    state, prefix = masker.initial_state(), b""
    for _ in range(data.draw(st.integers(1, 8), label="steps")):
        w = forced_bytes(masker, state)
        allowed = engine_bits(masker.mask(state), vocab_size)
        for t in np.nonzero(allowed)[0].tolist():
            if t == EOS_ID:
                assert w == b"", f"EOS allowed after {prefix!r}, yet {w!r} is forced"
            else:
                assert w.startswith(tokens[t]) or tokens[t].startswith(w), (prefix, w, tokens[t])
        ff = ff_tokens(masker, state, w, max_tokens=max_tokens)
        spelled = b"".join(tokens[t] for t in ff)
        assert w.startswith(spelled)
        after = state
        for t in ff:
            after = masker.advance(after, t)  # raises if refused
        _check_withheld(ref, tokens, prefix, w, spelled, greedy_tokenize(vocab)(w), max_tokens)
        if ff:
            event("ff tokens")
            want = np.zeros(vocab_size, dtype=bool)
            want[: len(tokens)] = ref.allowed(prefix + spelled, tokens)
            want[EOS_ID] = ref.complete(prefix + spelled)
            assert (engine_bits(masker.mask(after), vocab_size) == want).all(), (prefix, spelled)
        choices = np.nonzero(allowed)[0].tolist()
        if not choices:
            break
        t = data.draw(st.sampled_from(choices), label="token")
        if t == EOS_ID:
            break
        state, prefix = masker.advance(state, t), prefix + tokens[t]


def _check_withheld(ref, tokens, prefix: bytes, w: bytes, spelled: bytes, full: list[int], max_tokens: int) -> None:
    """llguidance's rule: from no offset in the window before the ff tokens' end does an allowed
    token begin with the rest of ``w`` and run past it."""
    window = sum(len(tokens[t]) for t in full[len(full) - max_tokens :]) if max_tokens else 0
    for i in range(max(0, len(w) - window), len(spelled)):
        rest = w[i:]
        longer = [t for t in tokens if t and t.startswith(rest) and len(t) > len(rest)]
        assert not any(ref.allowed(prefix + w[:i], longer)), (prefix, w, i, longer)


# ---------------------------------------------------------------------------------------------
# fixed cases


def test_keywords_and_eos(calc_vocab) -> None:
    vocab = gg.Vocabulary.from_token_bytes(BYTE_TOKENS, eos_token_ids=[EOS_ID])
    m = gg.Matcher(gg.compile(gg.Grammar(FORCING[0]), vocab))
    assert m.find_jump_forward_bytes() == b""  # t, f or n
    assert m.accept_token(byte_id(ord("t")))
    assert m.find_jump_forward_bytes() == b"rue"
    assert m.find_jump_forward_bytes(max_bytes=2) == b"ru"
    assert m.compute_ff_tokens() == [byte_id(b) for b in b"rue"]  # no token is longer than a byte
    assert m.accept_tokens(m.compute_ff_tokens()) == 3 and m.is_complete()
    assert m.find_jump_forward_bytes() == b"" and m.compute_ff_tokens() == []  # EOS is allowed
    m.accept_token(EOS_ID)
    assert m.is_terminated() and m.find_jump_forward_bytes() == b""


def test_forced_bytes_can_end_inside_a_character() -> None:
    vocab = gg.Vocabulary.from_token_bytes(BYTE_TOKENS + ["é".encode(), "è".encode()], eos_token_ids=[EOS_ID])
    m = gg.Matcher(gg.compile(gg.Grammar('start: "é" | "è"\n'), vocab))
    assert m.find_jump_forward_bytes() == b"\xc3"
    assert m.compute_ff_tokens() == []  # "é" runs past the forced byte: the model picks it
    assert m.compute_ff_tokens(max_tokens=0) == [byte_id(0xC3)]  # no withholding: the bare byte


def test_unbounded_forcing_stops_at_max_bytes() -> None:
    vocab = gg.Vocabulary.from_token_bytes(BYTE_TOKENS, eos_token_ids=[EOS_ID])
    m = gg.Matcher(gg.compile(gg.Grammar('start: "a"* "b" | "c"\n'), vocab))
    assert m.accept_token(byte_id(ord("a"))) is True
    assert m.find_jump_forward_bytes() == b""  # "a" or "b"
    m2 = gg.Matcher(gg.compile(gg.Grammar('start: "x" "ab"~60 "c"\n'), vocab))
    assert m2.find_jump_forward_bytes() == b"x" + b"ab" * 60 + b"c"
    assert len(m2.find_jump_forward_bytes(max_bytes=MAX_FORCED_BYTES // 8)) == MAX_FORCED_BYTES // 8


def test_bad_arguments(calc_compiled) -> None:
    m = gg.Matcher(calc_compiled)
    with pytest.raises(ValueError, match="max_bytes"):
        m.find_jump_forward_bytes(max_bytes=-1)
    with pytest.raises(ValueError, match="max_tokens"):
        m.compute_ff_tokens(max_tokens=-1)
    vocab = gg.Vocabulary.from_token_bytes(BYTE_TOKENS, eos_token_ids=[EOS_ID])
    m = gg.Matcher(gg.compile(gg.Grammar(FORCING[0]), vocab))
    m.accept_token(byte_id(ord("t")))
    with pytest.raises(gg.TokenizerError, match="spell a prefix"):
        m.compute_ff_tokens(lambda data: [byte_id(ord("x"))])
    with pytest.raises(ValueError, match="not forced"):
        ff_tokens(m.masker, m.state, b"xyz")


# ---------------------------------------------------------------------------------------------
# real tokenizers


@pytest.mark.real_tokenizers
def test_llguidance_order_id_example(vocabularies, hf_tokenizers) -> None:
    """llguidance's example: after ``{"`` the grammar forces ``order``; Llama-3 has the token
    ``orderId``, so ``order`` is withheld and only ``{"`` is forced."""
    require_tokenizer("llama3")
    vocab, hf = vocabularies("llama3"), hf_tokenizers("llama3")
    m = gg.Matcher(gg.compile(gg.Grammar(FORCING[3]), vocab))  # no %ignore: nothing before '{'
    assert m.find_jump_forward_bytes() == b'{"order'
    tokenize = bytes_tokenizer(hf, vocab.token_bytes)
    ff = m.compute_ff_tokens(tokenize)
    assert [vocab.token_bytes[t] for t in ff] == [b'{"']
    assert m.accept_tokens(ff) == 1
    assert m.compute_ff_tokens(tokenize) == []
    assert m.compute_ff_tokens(tokenize, max_tokens=0) == encode_exact(hf, "order", vocab.token_bytes)


JSON_FILES = ["y_object_basic.json", "y_array_with_several_null.json", "y_array_false.json", "y_structure_lonely_true.json"]


@pytest.mark.real_tokenizers
@pytest.mark.parametrize("name", ["llama2", "qwen3"])
def test_json_walks_keep_their_text(name: str, vocabularies, hf_tokenizers) -> None:
    """JSONTestSuite files cut after every byte (mid-token and mid-keyword states too): the rest of
    the text begins with the forced bytes, the ff tokens are accepted, and after them the rest of
    the text still walks to a complete output (the walks after fast-forwarding equal the walks
    without)."""
    require_tokenizer(name)
    vocab, hf = vocabularies(name), hf_tokenizers(name)
    masker = gg.Masker(gg.compile(gg.Grammar.from_file(GRAMMARS / "json.lark"), vocab))
    tokenize = bytes_tokenizer(hf, vocab.token_bytes)
    forced_steps = 0
    for fname in JSON_FILES:
        text = (TEST_DATA / "jsontestsuite" / "test_parsing" / fname).read_bytes()
        for cut in range(len(text) + 1):
            n, state = masker.viable_prefix(masker.initial_state(), text[:cut])
            assert n == cut
            rest = text[cut:]
            w = forced_bytes(masker, state)
            assert rest.startswith(w), (fname, cut, w)
            ff = ff_tokens(masker, state, w, tokenize)
            spelled = b"".join(vocab.token_bytes[f] for f in ff)
            after = state
            for f in ff:
                after = masker.advance(after, f)
            n, end = masker.viable_prefix(after, rest[len(spelled) :])
            assert n == len(rest) - len(spelled) and masker.is_complete(end), (fname, cut, spelled)
            forced_steps += bool(ff)
    assert forced_steps > 0
