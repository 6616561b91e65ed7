"""MaskWorkers: a batch's masks computed in worker processes equal the masks computed in the caller.

Every fill through the workers is compared row by row with each matcher's own ``next_token_mask``
(the caller's Masker: another process, other caches): seeded random walks of a batch under the
calc grammar and under the Python benchmark grammar with its indenter (whose stacks carry bracket
depth and indentation levels), two grammars of different vocabulary sizes in one batch, finished
rows and None rows, rows taken from both ends of a worker's list, a torch bitmask. Also: a worker killed between fills (its rows are filled in
the caller, with a warning, and a new worker takes over), grammars forgotten past
``max_grammars``, the cost-based choice to stay in the caller, the worker's hash-consed stacks,
extended lexer states that the caller numbered otherwise than the workers (sent by key).
"""

from __future__ import annotations

import os
import random
import time

import numpy as np
import pytest
from helpers import CALC_TOKENS
from test_python_grammar import OWN_PROGRAMS, small_compiled, small_ids

import greatgramma as gg
from greatgramma.cache import per_object
from greatgramma.serving import MaskWorkers
from greatgramma.serving.mask_workers import _Frames, _SentFrames, _sort_rows
from greatgramma.indenter import IndentedStack
from greatgramma.stack import Frame, frames_of

EOS = 0


@pytest.fixture(scope="module")
def pool():
    with MaskWorkers(2, min_batch=1, min_seconds=0.0) as workers:  # always through the workers
        assert workers.wait(timeout=60)
        yield workers


@pytest.fixture
def slow_caller(monkeypatch):
    """The caller sleeps 5 ms before each share of rows it fills: the calc grammar's masks take
    microseconds, and a caller that fast would take every job before a worker woke up."""
    fill_here = MaskWorkers._masks_here

    def slowly(self, matchers, rows, **learn):
        if rows:
            time.sleep(0.005)
        return fill_here(self, matchers, rows, **learn)

    monkeypatch.setattr(MaskWorkers, "_masks_here", slowly)


def words_of(m: gg.Matcher) -> int:
    return (m.vocab_size + 31) // 32


reference = per_object(gg.Masker)  # maskers of their own: the matchers' maskers keep the workers' masks


def check_fill(pool: MaskWorkers, matchers: list[gg.Matcher | None], width: int | None = None) -> np.ndarray:
    """Fill through the workers; every row equals its mask computed by a masker the workers'
    masks never went into; None rows untouched."""
    width = width or max(words_of(m) for m in matchers if m is not None)
    bitmask = np.full((len(matchers) + 1, width), -1, dtype=np.int32)
    gg.fill_next_token_bitmasks(matchers, bitmask, workers=pool)
    for i, m in enumerate(matchers):
        if m is None:
            assert (bitmask[i] == -1).all(), f"row {i} (None) was written"
            continue
        own = m.next_token_mask() if m.is_terminated() else reference(m.compiled).mask(m.state)
        assert np.array_equal(bitmask[i, : len(own)], own), f"row {i}: the workers' mask differs"
        assert not bitmask[i, len(own) :].any(), f"row {i}: words past the vocabulary not zeroed"
    assert (bitmask[-1] == -1).all()
    return bitmask


def random_walks(pool: MaskWorkers, compiled: gg.CompiledGrammar, batch: int, steps: int, seed: int) -> int:
    """``batch`` matchers take random allowed tokens in lockstep; every step's fill is checked."""
    rng = random.Random(seed)
    masker = gg.Masker(compiled)
    matchers = [gg.Matcher(masker) for _ in range(batch)]
    filled, before = 0, pool.rows_from_workers
    for _ in range(steps):
        bitmask = check_fill(pool, matchers)
        filled += 1
        for i, m in enumerate(matchers):
            allowed = np.nonzero(gg.bitmask_to_bool(bitmask[i], m.vocab_size))[0].tolist()
            assert allowed, f"row {i}: empty mask"
            if m.is_terminated():
                continue
            choices = [t for t in allowed if t not in m.eos_token_ids] or allowed
            assert m.accept_token(rng.choice(choices))
    assert pool.rows_from_workers > before, "the workers filled no row"
    assert pool.seconds_in_workers > 0 and pool.seconds_here > 0
    return filled


def test_calc_walks(pool: MaskWorkers, calc_compiled, slow_caller) -> None:
    assert random_walks(pool, calc_compiled, batch=7, steps=25, seed=1) == 25
    pool.clear_caches()  # fresh maskers in the workers: the same masks
    assert random_walks(pool, calc_compiled, batch=7, steps=10, seed=1) == 10


def test_indented_stacks(pool: MaskWorkers, slow_caller) -> None:
    """Python with the indenter: each row walks a prefix of a program, then random tokens."""
    compiled = small_compiled()
    masker = gg.Masker(compiled)
    programs = [p.read_bytes() for p in OWN_PROGRAMS]
    matchers = []
    for k in range(6):
        m = gg.Matcher(masker)
        ids = small_ids(programs[k % len(programs)])
        assert m.accept_tokens(ids[: 40 + 30 * k]) == len(ids[: 40 + 30 * k])
        matchers.append(m)
    for step in range(12):
        bitmask = check_fill(pool, matchers)
        for i, m in enumerate(matchers):
            allowed = np.nonzero(gg.bitmask_to_bool(bitmask[i], m.vocab_size))[0].tolist()
            tok = random.Random(step * 31 + i).choice([t for t in allowed if t != EOS])
            assert m.accept_token(tok)
    assert random_walks(pool, compiled, batch=5, steps=15, seed=2) == 15


def test_mixed_grammars_finished_and_empty_rows(pool: MaskWorkers, calc_compiled) -> None:
    small = gg.Vocabulary.from_token_bytes(CALC_TOKENS, eos_token_ids=[0], vocab_size=70)
    other = gg.compile(gg.Grammar('start: "1"+ "+"\n'), small)
    done = gg.Matcher(calc_compiled)
    assert done.accept_tokens([CALC_TOKENS.index(b"1"), EOS]) == 2 and done.is_terminated()
    rows = [gg.Matcher(calc_compiled), None, gg.Matcher(other), done, None, gg.Matcher(other), gg.Matcher(calc_compiled)]
    assert rows[5].accept_token(CALC_TOKENS.index(b"1"))
    bitmask = check_fill(pool, rows, width=8)
    assert np.nonzero(gg.bitmask_to_bool(bitmask[3], calc_compiled.vocab.vocab_size))[0].tolist() == [EOS]


def test_rows_taken_from_both_ends(pool: MaskWorkers, calc_compiled) -> None:
    """Rows only the worker was given (the caller's share is empty): the caller takes jobs from the
    end of the worker's list while the worker takes them from the front; every row filled once."""
    rng = random.Random(3)
    for _ in range(10):
        masker = gg.Masker(calc_compiled)  # nothing cached in the caller: every row is a job
        matchers: list[gg.Matcher | None] = []
        for i in range(24):
            m = gg.Matcher(masker)
            m.accept_tokens([rng.randrange(2, len(CALC_TOKENS)) for _ in range(rng.randrange(4))])
            matchers.append(m if i % 3 == 1 else None)  # rows 1, 4, 7, ...: the first worker's share of 3
        check_fill(pool, matchers)


def test_torch_bitmask(pool: MaskWorkers, calc_compiled) -> None:
    torch = pytest.importorskip("torch", reason="torch not installed (pip install '.[torch]')")
    matchers = [gg.Matcher(calc_compiled) for _ in range(5)]
    matchers[2].accept_token(CALC_TOKENS.index(b"("))
    need = words_of(matchers[0])
    bitmask = torch.full((5, need), -1, dtype=torch.int32)
    gg.fill_next_token_bitmasks(matchers, bitmask, workers=pool)
    for i, m in enumerate(matchers):
        assert np.array_equal(bitmask[i].numpy(), m.next_token_mask())


def uncached(compiled: gg.CompiledGrammar, n: int) -> list[gg.Matcher]:
    """``n`` matchers at ``n`` different states (the nearest to the start, by allowed tokens) over a
    new masker: none of their masks is cached in the caller, and no two rows share one."""
    probe = gg.Masker(compiled)
    paths, seen, queue = [], set(), [((), probe.initial_state())]
    while queue and len(paths) < n:
        path, state = queue.pop(0)
        if (state.lexer, state.stack) in seen:
            continue
        seen.add((state.lexer, state.stack))
        paths.append(path)
        for tok in np.nonzero(gg.bitmask_to_bool(probe.mask(state), compiled.vocab.vocab_size))[0].tolist():
            if tok not in compiled.vocab.eos_token_ids:
                queue.append((path + (tok,), probe.advance(state, tok)))
    assert len(paths) == n, f"only {len(paths)} states"
    masker = gg.Masker(compiled)
    matchers = [gg.Matcher(masker) for _ in paths]
    assert all(m.accept_tokens(p) == len(p) for m, p in zip(matchers, paths))
    return matchers


def test_killed_worker_is_replaced(calc_compiled) -> None:
    with MaskWorkers(1, min_batch=1, min_seconds=0.0) as workers:
        assert workers.wait(timeout=60)
        check_fill(workers, uncached(calc_compiled, 4))
        worker = workers._workers[0]
        worker._proc.kill()
        worker._proc.join()
        with pytest.warns(RuntimeWarning, match="mask worker 0 stopped"):
            check_fill(workers, uncached(calc_compiled, 4))  # filled in the caller
        assert workers.wait(timeout=60)
        check_fill(workers, uncached(calc_compiled, 4))  # a fresh worker
        assert worker._proc is not None and worker._proc.is_alive() and worker._grammars
    with pytest.raises(gg.GreatGrammaError, match="closed"):
        matchers = uncached(calc_compiled, 4)
        workers.fill(matchers, np.zeros((4, words_of(matchers[0])), dtype=np.int32))


def test_grammars_forgotten_past_max_grammars(calc_vocab) -> None:
    texts = ['start: "1"+\n', 'start: "x" "y"*\n', 'start: ("1" | "2") "+"?\n']
    compiled = [gg.compile(gg.Grammar(t), calc_vocab) for t in texts]
    with MaskWorkers(1, min_batch=1, min_seconds=0.0, max_grammars=2) as workers:
        assert workers.wait(timeout=60)
        for round_ in range(2):
            for c in compiled:
                check_fill(workers, uncached(c, 3))
                assert len(workers._grammars) <= 2
                assert len(os.listdir(workers._dir)) == len(workers._grammars)
        assert workers._workers[0]._grammars == set(workers._grammars)


def test_cheap_batches_stay_in_the_caller(calc_compiled) -> None:
    with MaskWorkers(1, min_batch=2, min_seconds=10.0) as workers:
        assert workers.wait(timeout=60)
        check_fill(workers, uncached(calc_compiled, 6))
        check_fill(workers, uncached(calc_compiled, 6))  # it learned that a row costs far less than 10 s / 6
        assert workers.rows_from_workers <= 6 and len(workers._workers[0]._grammars) <= 1
    with MaskWorkers(1, min_batch=8, min_seconds=0.0) as workers:
        assert workers.wait(timeout=60)
        check_fill(workers, [gg.Matcher(calc_compiled) for _ in range(7)])
        assert not workers._workers[0]._grammars


def test_masks_the_caller_holds_stay_in_the_caller(calc_compiled, slow_caller) -> None:
    """Rows whose masks the caller's masker holds are filled there; the masks the workers computed
    go into it, so the same states a step later ask the workers nothing; rows of one state are
    computed once."""
    with MaskWorkers(1, min_batch=1, min_seconds=0.0) as workers:
        assert workers.wait(timeout=60)
        matchers = uncached(calc_compiled, 6)
        twins = [gg.Matcher(matchers[0].masker), gg.Matcher(matchers[0].masker)]  # at the start, as matchers[0]
        masks, live, same = _sort_rows(matchers + twins, list(range(8)))
        assert not masks and live == list(range(6)) and same == {6: 0, 7: 0}
        check_fill(workers, matchers + twins)
        assert workers.rows_from_workers > 0
        asked = workers.rows_from_workers
        masks, live, same = _sort_rows(matchers + twins, list(range(8)))
        assert len(masks) == 8 and not live and not same  # all cached in the caller now, the workers' rows too
        check_fill(workers, matchers + twins)
        check_fill(workers, matchers[:3] + uncached(calc_compiled, 2)[1:])  # one row left: not worth a round trip
        assert workers.rows_from_workers == asked
    with pytest.raises(ValueError, match="has 1 words"):
        matchers[0].masker._keep_mask(matchers[0].state, np.zeros(2, dtype=np.int32))


def test_a_starting_worker_is_not_waited_for(calc_compiled) -> None:
    with MaskWorkers(1, min_batch=1, min_seconds=0.0) as workers:
        check_fill(workers, [gg.Matcher(calc_compiled) for _ in range(6)])  # at once, in the caller
        assert not workers._workers[0]._grammars


def test_bad_bitmask_leaves_the_workers_running(pool: MaskWorkers, calc_compiled) -> None:
    matchers = [gg.Matcher(calc_compiled) for _ in range(6)]
    procs = [w._proc for w in pool._workers]
    with pytest.raises(ValueError, match="needs 1"):
        gg.fill_next_token_bitmasks(matchers, np.zeros((6, 0), dtype=np.int32), workers=pool)
    with pytest.raises(IndexError, match="out of range"):
        gg.fill_next_token_bitmasks(matchers, np.zeros((3, 1), dtype=np.int32), workers=pool)
    with pytest.raises(TypeError, match="int32"):
        gg.fill_next_token_bitmasks(matchers, np.zeros((6, 1), dtype=np.int64), workers=pool)
    assert [w._proc for w in pool._workers] == procs and all(p is None or p.is_alive() for p in procs)
    check_fill(pool, matchers)


def test_bad_options() -> None:
    with pytest.raises(ValueError, match="processes"):
        MaskWorkers(0)
    with pytest.raises(ValueError, match="max_grammars"):
        MaskWorkers(1, max_grammars=0)


def test_stacks_sent_as_the_frames_the_worker_lacks() -> None:
    """A stack travels as its deepest frame the worker holds and the states pushed since; equal
    stacks share frames in the worker; a worker that missed frames refuses the next stack; a
    cleared pair starts over; the indenter's stacks keep their brackets and levels."""
    sent, held = _SentFrames(), _Frames()

    def travel(*stacks):  # as a message does: every stack encoded, then every one decoded
        return [held.decode(*code) for code in [sent.encode(st) for st in stacks]]

    a = frames_of((0, 5, 7, 9))
    b = Frame(11, a.parent)  # (0, 5, 7, 11): shares three frames with a
    got_a, got_b, again_a = travel(a, b, a)
    assert got_a.states() == (0, 5, 7, 9) and got_b.states() == (0, 5, 7, 11)
    assert again_a is got_a and got_b.parent is got_a.parent and len(sent) == 5
    c = Frame(3, Frame(2, b))  # the next step: two pushes on b, and only they travel
    assert sent.encode(c)[1:] == (4, (2, 3), 5)
    sent, held = _SentFrames(), _Frames()
    got_a, got_b, got_c = travel(a, b, c)
    assert len(sent) == 7 and got_c.parent.parent is got_b and got_c == c
    twin = frames_of((0, 5, 7, 11, 2, 3))  # equal to c, but none of c's frames: the same frames there
    assert travel(twin)[0] is got_c
    sent.encode(Frame(4, c))  # never reaches the worker
    with pytest.raises(gg.GreatGrammaError, match="out of order"):
        travel(Frame(5, c))
    sent.clear()
    held.clear()
    again = travel(c)[0]
    assert again == c and again is not got_c
    indented = IndentedStack(2, (0, 4), c)
    got = travel(indented)[0]
    assert type(got) is IndentedStack and got == indented and got.lalr == c


def test_extended_states_met_after_the_artifact(pool: MaskWorkers) -> None:
    """Extended (backing-up) lexer states are numbered by each process as it meets them: a state
    the caller numbered otherwise than a worker reaches the worker by its key, not its number."""
    text = 'start: (NAME | STRING)+\nNAME: /[a-z]+/\nSTRING: /[a-z]?("[^"\\n]*"|\'[^\'\\n]*\')/\n%ignore " "\n'
    pieces = [None, b"u", b'"', b"ab", b" ", b"'"]  # no token from the start holds a fallback
    compiled = gg.compile(gg.Grammar(text), gg.Vocabulary.from_token_bytes(pieces, eos_token_ids=[EOS]))
    masker, lexer = gg.Masker(compiled), compiled.lexer
    first = gg.Matcher(masker)
    check_fill(pool, [first, first])  # the workers have the grammar now, no extended state met yet
    assert lexer.num_lexer_states == lexer.num_states
    burnt = lexer.feed(0, b"u'x")[1]  # the caller meets u' first (as another request's token would)
    assert burnt >= lexer.num_states
    m = _SlowHere(masker)  # so that the workers, not the caller, fill its rows
    assert m.accept_tokens([pieces.index(p) for p in (b"u", b'"', b"ab")]) == 3
    assert m.state.lexer > burnt  # numbered after it here; a worker meets it first
    check_fill(pool, [first] + [m] * 6)


class _SlowHere(gg.Matcher):
    """A matcher whose masks take a while in the caller (the workers get its state only)."""

    def next_token_mask(self):
        time.sleep(0.05)
        return super().next_token_mask()


def test_a_failure_in_a_worker_reaches_the_caller(calc_compiled, tmp_path, monkeypatch, slow_caller) -> None:
    """A worker that cannot load a grammar raises what load raised, in the caller, at the fill."""
    with MaskWorkers(1, min_batch=1, min_seconds=0.0) as workers:
        assert workers.wait(timeout=60)
        bogus = tmp_path / "bogus.gg"
        bogus.write_bytes(b"not an artifact")
        monkeypatch.setattr(workers, "artifact", lambda compiled: str(bogus))
        with pytest.raises(gg.GreatGrammaError, match="bogus.gg"):
            check_fill(workers, uncached(calc_compiled, 4))
        assert workers._workers[0]._proc.is_alive()


def test_after_a_quick_fill_the_next_stays_in_the_caller(calc_compiled, monkeypatch) -> None:
    """A fill done in the caller in under ``min_seconds / 2`` sends the next one there at once,
    without looking up which masks are cached (as the serial fill does); the time is measured again."""
    from greatgramma.serving import mask_workers

    sorted_ = []
    monkeypatch.setattr(mask_workers, "_sort_rows", lambda *a: sorted_.append(1) or _sort_rows(*a))
    with MaskWorkers(1, min_batch=1, min_seconds=0.5) as workers:
        assert workers.wait(timeout=60)
        check_fill(workers, uncached(calc_compiled, 6))  # 6 rows at 1 ms each, as first guessed: in the caller
        assert sorted_ == [1] and workers._cheap  # it took microseconds
        check_fill(workers, uncached(calc_compiled, 6))
        assert sorted_ == [1] and workers._cheap and workers.rows_from_workers == 0
