"""Matcher: accept/reject, validate, rollback/reset, termination, bitmask filling (single and batch)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from helpers import CALC_TOKENS

import greatgramma as gg
from greatgramma.matcher import RollbackError

EOS = 0


def tid(piece: bytes) -> int:
    return CALC_TOKENS.index(piece)


def toks(*pieces: bytes) -> list[int]:
    return [tid(p) for p in pieces]


def allowed(words: np.ndarray) -> set[int]:
    """Independent unpacking: bit t & 31 of word t >> 5, low bit first."""
    return set(np.nonzero(np.unpackbits(np.asarray(words, dtype="<i4").view(np.uint8), bitorder="little"))[0].tolist())


@pytest.fixture()
def matcher(calc_compiled) -> gg.Matcher:
    return gg.Matcher(calc_compiled)


def test_accept_and_reject_leave_state(matcher: gg.Matcher) -> None:
    start = matcher.state
    assert matcher.accept_token(tid(b"1+"))
    after_one = matcher.state
    assert after_one != start and not matcher.is_complete()
    for bad in [tid(b"+"), tid(b")"), EOS, 1, tid(b"\xc3"), -1, 10_000, len(CALC_TOKENS) + 3]:
        assert matcher.accept_token(bad) is False  # never raises
        assert matcher.state is after_one
    assert matcher.accept_token(np.int64(tid(b"(")))  # numpy ints are fine
    assert matcher.accept_token(tid(b"xy")) and not matcher.is_complete()
    assert matcher.accept_token(tid(b")")) and matcher.is_complete()
    assert matcher.num_rollback_tokens == 4
    with pytest.raises(TypeError):
        matcher.accept_token("1")  # type: ignore[arg-type]


def test_validate_tokens_does_not_move(matcher: gg.Matcher) -> None:
    seq = toks(b"1", b"+", b"2", b"+", b"+", b"1")
    start = matcher.state
    assert matcher.validate_tokens(seq) == 4  # "1+2+" then "+" is rejected
    assert matcher.state is start
    assert matcher.validate_tokens([]) == 0
    assert matcher.validate_tokens(toks(b"1", b"+2") + [EOS, tid(b"1")]) == 3  # nothing after EOS
    assert matcher.state is start


def test_accept_tokens_stops_at_first_rejection(matcher: gg.Matcher, calc_compiled) -> None:
    seq = toks(b"1", b"+", b"2", b"+", b"+", b"1")
    assert matcher.accept_tokens(seq) == 4
    masker = gg.Masker(calc_compiled)
    state = masker.initial_state()
    for t in seq[:4]:
        state = masker.advance(state, t)
    assert (matcher.state.lexer, matcher.state.stack) == (state.lexer, state.stack)
    assert matcher.num_rollback_tokens == 4


def test_rollback_and_reset(matcher: gg.Matcher) -> None:
    states = [matcher.state]
    for t in toks(b"(", b"1", b"+", b"x", b")"):
        assert matcher.accept_token(t)
        states.append(matcher.state)
    matcher.rollback(2)
    assert matcher.state == states[3]
    matcher.rollback(0)
    assert matcher.state == states[3]
    with pytest.raises(RollbackError, match="only 3"):
        matcher.rollback(4)
    assert matcher.state == states[3]  # a failed rollback changes nothing
    with pytest.raises(ValueError):
        matcher.rollback(-1)
    assert matcher.accept_token(tid(b"y")) and matcher.accept_token(tid(b")"))
    matcher.reset()
    assert matcher.state == states[0] and matcher.num_rollback_tokens == 0
    with pytest.raises(gg.GreatGrammaError):
        matcher.rollback(1)


def test_max_rollback_tokens(calc_compiled) -> None:
    m = gg.Matcher(calc_compiled, max_rollback_tokens=2)
    assert m.accept_tokens(toks(b"1", b"+", b"2", b"*")) == 4
    assert m.num_rollback_tokens == 2
    with pytest.raises(RollbackError, match="max_rollback_tokens=2"):
        m.rollback(3)
    m.rollback(2)
    assert m.validate_tokens(toks(b"x", b"+")) == 2 and m.validate_tokens(toks(b"+")) == 0  # back after "1+"
    with pytest.raises(ValueError):
        gg.Matcher(calc_compiled, max_rollback_tokens=-1)


def test_termination(matcher: gg.Matcher) -> None:
    assert matcher.accept_tokens(toks(b"1", b"+", b"2")) == 3
    assert not matcher.is_terminated()
    assert EOS in allowed(matcher.next_token_mask())
    assert matcher.accept_token(EOS)
    assert matcher.is_terminated() and not matcher.is_complete()
    for t in [tid(b"1"), tid(b"+"), EOS]:
        assert matcher.accept_token(t) is False
    assert allowed(matcher.next_token_mask()) == {EOS}  # a finished row only repeats EOS
    matcher.rollback(1)
    assert not matcher.is_terminated() and matcher.is_complete()


def test_mask_agrees_with_accept(matcher: gg.Matcher) -> None:
    """Every token the mask allows is accepted, every other is rejected, along a walk."""
    v = matcher.vocab_size
    for t in toks(b"(", b"1", b"+", b"x*", b"y", b")"):
        ok = allowed(matcher.next_token_mask())
        assert ok == {u for u in range(v) if matcher.validate_tokens([u]) == 1}
        assert matcher.accept_token(t)
    bools = gg.bitmask_to_bool(matcher.next_token_mask(), v)
    assert set(np.nonzero(bools)[0].tolist()) == allowed(matcher.next_token_mask())


def test_fill_into_wider_bitmask(matcher: gg.Matcher, calc_compiled) -> None:
    masker = matcher.masker
    need = (calc_compiled.vocab.vocab_size + 31) // 32
    matcher.accept_tokens(toks(b"1", b"+"))
    bm = np.full((3, need + 3), -1, dtype=np.int32)
    matcher.fill_next_token_bitmask(bm, 1)
    assert np.array_equal(bm[1, :need], masker.mask(matcher.state))
    assert (bm[1, need:] == 0).all()
    assert (bm[0] == -1).all() and (bm[2] == -1).all()  # other rows untouched
    one = np.full(need + 1, -1, dtype=np.int32)
    matcher.fill_next_token_bitmask(one)
    assert np.array_equal(one[:need], masker.mask(matcher.state)) and one[need] == 0
    alloc = gg.allocate_token_bitmask(2, calc_compiled.vocab.vocab_size)
    assert alloc.shape == gg.get_bitmask_shape(2, calc_compiled.vocab.vocab_size) == (2, need)
    assert alloc.dtype == np.int32 and (alloc == -1).all()
    matcher.fill_next_token_bitmask(alloc, -1)  # negative rows index from the end, as in numpy
    assert np.array_equal(alloc[1], masker.mask(matcher.state))


def test_fill_errors(matcher: gg.Matcher, calc_compiled) -> None:
    need = (calc_compiled.vocab.vocab_size + 31) // 32
    with pytest.raises(TypeError, match="int32"):
        matcher.fill_next_token_bitmask(np.zeros((1, need), dtype=np.int64))
    with pytest.raises(IndexError):
        matcher.fill_next_token_bitmask(np.zeros((1, need), dtype=np.int32), 1)
    with pytest.raises(TypeError):
        matcher.fill_next_token_bitmask([[0] * need])
    small = gg.Vocabulary.from_token_bytes(CALC_TOKENS, eos_token_ids=[0], vocab_size=70)
    wide = gg.Matcher(gg.compile(gg.Grammar("start: \"a\"+\n"), small))
    with pytest.raises(ValueError, match="needs 3"):
        wide.fill_next_token_bitmask(np.zeros((1, 2), dtype=np.int32))


def test_batch_fill_equals_per_matcher(calc_compiled) -> None:
    walks = [[], toks(b"1"), toks(b"(", b"x"), toks(b"1", b"+", b"2", b")") [:3], toks(b"2") + [EOS]]
    matchers: list[gg.Matcher | None] = []
    for w in walks:
        m = gg.Matcher(calc_compiled)
        assert m.accept_tokens(w) == len(w)
        matchers.append(m)
    matchers.insert(2, None)
    need = (calc_compiled.vocab.vocab_size + 31) // 32
    bm = np.full((len(matchers) + 1, need + 1), -1, dtype=np.int32)
    gg.fill_next_token_bitmasks(matchers, bm)
    for i, m in enumerate(matchers):
        if m is None:
            assert (bm[i] == -1).all()
        else:
            single = np.full(need + 1, 7, dtype=np.int32)
            m.fill_next_token_bitmask(single)
            assert np.array_equal(bm[i], single)
    assert (bm[-1] == -1).all()
    assert allowed(bm[len(matchers) - 1, :need]) == {EOS}
    gg.fill_next_token_bitmasks([None, None], bm)  # nothing to do
    masks = [None if m is None else m.next_token_mask() for m in matchers]
    bm[:] = 0  # the fill copied the masker's cached words: writing the rows leaves them as they were
    gg.fill_next_token_bitmasks(matchers, bm)
    for m, mask in zip(matchers, masks):
        if m is not None:
            assert np.array_equal(m.next_token_mask(), mask)
            m.next_token_mask()[:] = 0  # nor does writing what next_token_mask returns
            assert np.array_equal(m.next_token_mask(), mask)


def test_matchers_share_a_masker(calc_compiled) -> None:
    a, b = gg.Matcher(calc_compiled), gg.Matcher(calc_compiled)
    assert a.masker is b.masker
    own = gg.Masker(calc_compiled)
    assert gg.Matcher(own).masker is own
    with pytest.raises(TypeError):
        gg.Matcher("start: x")  # type: ignore[arg-type]


def test_fill_torch_bitmask(matcher: gg.Matcher, calc_compiled) -> None:
    torch = pytest.importorskip("torch", reason="torch not installed (pip install '.[torch]')")
    need = (calc_compiled.vocab.vocab_size + 31) // 32
    matcher.accept_token(tid(b"1"))
    bm = torch.full((2, need + 2), -1, dtype=torch.int32)
    matcher.fill_next_token_bitmask(bm, 1)
    assert np.array_equal(bm[1, :need].numpy(), matcher.next_token_mask())
    assert (bm[1, need:] == 0).all() and (bm[0] == -1).all()
    gg.fill_next_token_bitmasks([None, matcher], bm[:, :need])  # a non-contiguous view is written through
    assert np.array_equal(bm[1, :need].numpy(), matcher.next_token_mask())
    with pytest.raises(TypeError, match="int32"):
        matcher.fill_next_token_bitmask(torch.zeros((1, need), dtype=torch.int64))


def test_device_write_path_on_cpu(calc_compiled) -> None:
    """The path used for accelerator tensors (host staging, one scatter), run on a CPU tensor."""
    torch = pytest.importorskip("torch", reason="torch not installed (pip install '.[torch]')")
    from greatgramma.matcher import _write_device

    need = (calc_compiled.vocab.vocab_size + 31) // 32
    ms = [gg.Matcher(calc_compiled) for _ in range(3)]
    ms[1].accept_token(tid(b"("))
    ms[2].accept_tokens(toks(b"1") + [EOS])
    bm = torch.full((4, need + 1), -1, dtype=torch.int32)
    _write_device(bm, [0, -2, 3], [m.next_token_mask() for m in ms])
    for row, m in zip([0, 2, 3], ms):
        assert np.array_equal(bm[row, :need].numpy(), m.next_token_mask()) and bm[row, need] == 0
    assert (bm[1] == -1).all()
    one = torch.full((need,), -1, dtype=torch.int32)
    _write_device(one, [0], [ms[1].next_token_mask()])
    assert np.array_equal(one.numpy(), ms[1].next_token_mask())
    with pytest.raises(IndexError):
        _write_device(bm, [4], [ms[0].next_token_mask()])


def test_import_does_not_import_torch() -> None:
    code = "import sys, greatgramma; assert 'torch' not in sys.modules and 'transformers' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
