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
from greatgramma.serving import MaskWorkers
from greatgramma.serving.mask_workers import _Frames, _SentFrames
from greatgramma.stack import Frame, frames_of

EOS = 0


@pytest.fixture(scope="module")
def pool():
    with MaskWorkers(2, min_batch=1, min_seconds=0.0) as workers:  # always through the workers
        assert workers.wait(timeout=60)
        yield workers


def words_of(m: gg.Matcher) -> int:
    return (m.vocab_size + 31) // 32


def check_fill(pool: MaskWorkers, matchers: list[gg.Matcher | None], width: int | None = None) -> np.ndarray:
    """Fill through the workers; every row equals the matcher's own mask; None rows untouched."""
    width = width or max(words_of(m) for m in matchers if m is not None)
    bitmask = np.full((len(matchers) + 1, width), -1, dtype=np.int32)
    gg.fill_next_token_bitmasks(matchers, bitmask, workers=pool)
    for i, m in enumerate(matchers):
        if m is None:
            assert (bitmask[i] == -1).all(), f"row {i} (None) was written"
            continue
        own = m.next_token_mask()
        assert np.array_equal(bitmask[i, : len(own)], own), f"row {i}: the workers' mask differs"
        assert not bitmask[i, len(own) :].any(), f"row {i}: words past the vocabulary not zeroed"
    assert (bitmask[-1] == -1).all()
    return bitmask


def random_walks(pool: MaskWorkers, compiled: gg.CompiledGrammar, batch: int, steps: int, seed: int) -> int:
    """``batch`` matchers take random allowed tokens in lockstep; every step's fill is checked."""
    rng = random.Random(seed)
    masker = gg.Masker(compiled)
    matchers = [gg.Matcher(masker) for _ in range(batch)]
    filled = 0
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
    return filled


def test_calc_walks(pool: MaskWorkers, calc_compiled) -> None:
    assert random_walks(pool, calc_compiled, batch=7, steps=25, seed=1) == 25
    pool.clear_caches()  # fresh maskers in the workers: the same masks
    assert random_walks(pool, calc_compiled, batch=7, steps=10, seed=1) == 10


def test_indented_stacks(pool: MaskWorkers) -> None:
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
    masker = gg.Masker(calc_compiled)
    for _ in range(10):
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


def test_killed_worker_is_replaced(calc_compiled) -> None:
    with MaskWorkers(1, min_batch=1, min_seconds=0.0) as workers:
        matchers = [gg.Matcher(calc_compiled) for _ in range(4)]
        assert workers.wait(timeout=60)
        check_fill(workers, matchers)
        worker = workers._workers[0]
        worker._proc.kill()
        worker._proc.join()
        with pytest.warns(RuntimeWarning, match="mask worker 0 stopped"):
            check_fill(workers, matchers)  # filled in the caller
        assert workers.wait(timeout=60)
        check_fill(workers, matchers)  # a fresh worker
        assert worker._proc is not None and worker._proc.is_alive() and worker._grammars
    with pytest.raises(gg.GreatGrammaError, match="closed"):
        workers.fill(matchers, np.zeros((4, words_of(matchers[0])), dtype=np.int32))


def test_grammars_forgotten_past_max_grammars(calc_vocab) -> None:
    texts = ['start: "1"+\n', 'start: "x" "y"*\n', 'start: ("1" | "2") "+"?\n']
    compiled = [gg.compile(gg.Grammar(t), calc_vocab) for t in texts]
    with MaskWorkers(1, min_batch=1, min_seconds=0.0, max_grammars=2) as workers:
        assert workers.wait(timeout=60)
        for round_ in range(2):
            for c in compiled:
                check_fill(workers, [gg.Matcher(c) for _ in range(3)])
                assert len(workers._grammars) <= 2
                assert len(os.listdir(workers._dir)) == len(workers._grammars)
        assert workers._workers[0]._grammars == set(workers._grammars)


def test_cheap_batches_stay_in_the_caller(calc_compiled) -> None:
    with MaskWorkers(1, min_batch=2, min_seconds=10.0) as workers:
        assert workers.wait(timeout=60)
        matchers = [gg.Matcher(calc_compiled) for _ in range(6)]
        check_fill(workers, matchers)  # learns that a row costs far less than 10 s / 6
        check_fill(workers, matchers)
        assert not workers._workers[0]._grammars  # never asked
    with MaskWorkers(1, min_batch=8, min_seconds=0.0) as workers:
        assert workers.wait(timeout=60)
        check_fill(workers, [gg.Matcher(calc_compiled) for _ in range(7)])
        assert not workers._workers[0]._grammars


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
    stacks share frames in the worker; a worker that missed frames refuses the next message; a
    cleared pair starts over."""
    sent, held = _SentFrames(), _Frames()
    a = frames_of((0, 5, 7, 9))
    b = Frame(11, a.parent)  # (0, 5, 7, 11): shares three frames with a
    got_a, got_b, again_a = held.loads(sent.dumps(("masks", [a, b, a])))[1]
    assert got_a.states() == (0, 5, 7, 9) and got_b.states() == (0, 5, 7, 11)
    assert again_a is got_a and got_b.parent is got_a.parent and len(sent) == 5
    c = Frame(3, Frame(2, b))  # the next step: two pushes on b, and only they travel
    got_c = held.loads(sent.dumps(("masks", [c])))[1][0]
    assert len(sent) == 7 and got_c.parent.parent is got_b and got_c == c
    twin = frames_of((0, 5, 7, 11, 2, 3))  # equal to c, but none of c's frames: the same frames there
    assert held.loads(sent.dumps(("masks", [twin])))[1][0] is got_c
    sent.dumps(("masks", [Frame(4, c)]))  # never reaches the worker
    with pytest.raises(gg.GreatGrammaError, match="out of order"):
        held.loads(sent.dumps(("masks", [Frame(5, c)])))
    sent.clear()
    held.clear()
    again = held.loads(sent.dumps(("masks", [c])))[1][0]
    assert again == c and again is not got_c


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
