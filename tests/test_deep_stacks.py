"""Deep nesting (issue 11, item 3): a step costs the same at any stack depth, and a walk 20,000
deep grows memory by its frames only.

No timings (the machine is shared): the work of a step is measured by deterministic proxies,
lines of Python executed (``sys.settrace``: catches any loop over the stack) and the bytes a
step allocates at its peak (``tracemalloc``: catches copying the stack, as slicing a tuple
does), compared between steps at depth ~200 and ~20,000 of the same walk; memory by the growth
of the resident set (Linux), with a generous bound. Time and RSS figures: eval/deep_stacks.py.
"""

from __future__ import annotations

import os
import pickle
import sys
import tracemalloc

import numpy as np
import pytest
from helpers import PAD_IDS, grammar_text

import greatgramma as gg
from greatgramma.cache import BoundedCache, LruCache, held_bytes
from greatgramma.indenter import IndentedStack
from greatgramma.stack import FRAME_BYTES, HELD_WALK, Frame, frames_bytes

DEPTH = 20_000
WINDOW = 16  # steps compared at each depth
MEMORY_BOUND = 50 << 20  # bytes the resident set may grow by during a walk DEPTH deep

ITEMS = r"""
start: "[" items "]"
items: NUM "," items | NUM
NUM: /[0-9]+/
"""

# name -> (grammar, indenter, token pieces, tokens of the walk as (opening piece, repeats, closing pieces))
CASES = {
    "json": (grammar_text("json"), None,
             [b"[", b"]", b"1", b",", b" ", b"[[", b"]]", b"]]]]", b"[1", b"1]", b"],", b"{", b"}", b'"a"', b":"]),
    "items": (ITEMS, None, [b"[", b"]", b"1", b",", b"1,", b",1", b"1]", b"12", b"]]"]),
    "indented": (grammar_text("indented"), "brackets",
                 [b"f", b"(", b")", b"a", b"\n", b"f(", b"))", b")\n", b"a,", b" ", b"//"]),
}


def compiled_case(name: str) -> tuple[gg.Masker, dict[bytes, int]]:
    text, indenter, pieces = CASES[name]
    tokens = [None, *pieces]  # id 0: EOS
    vocab = gg.Vocabulary.from_token_bytes(tokens, eos_token_ids=[0], vocab_size=len(tokens) + PAD_IDS)
    ind = gg.Indenter(open=("LPAR",), close=("RPAR",)) if indenter else None
    masker = gg.Masker(gg.compile(gg.Grammar(text, indenter=ind), vocab))
    return masker, {p: i for i, p in enumerate(tokens) if p is not None}


def walk_tokens(name: str, ids: dict[bytes, int], depth: int) -> list[int]:
    """Tokens of a walk whose stack gets about ``depth`` deep, then closes back to EOS."""
    if name == "json":
        return [ids[b"["]] * depth + [ids[b"]"]] * depth + [0]
    if name == "items":
        return [ids[b"["]] + [ids[b"1"], ids[b","]] * (depth // 2) + [ids[b"1"], ids[b"]"], 0]
    return [ids[b"f("]] * (depth // 2) + [ids[b"a"]] + [ids[b")"]] * (depth // 2) + [ids[b"\n"], 0]


def step(masker: gg.Masker, state: gg.State, token: int) -> gg.State:
    """mask + advance, checking that the mask allows the token it is about to take."""
    words = masker.mask(state).view(np.uint32)
    assert words[token >> 5] >> np.uint32(token & 31) & 1, f"token {token} is not allowed"
    return masker.advance(state, token)


def lines_executed(run) -> int:
    """Lines of Python that ``run()`` executes (a count of work that no other process changes)."""
    count = 0

    def local(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
        return local

    old = sys.gettrace()
    sys.settrace(lambda frame, event, arg: local)
    try:
        run()
    finally:
        sys.settrace(old)
    return count


def rss() -> int | None:
    """Resident set size in bytes (Linux), else None."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


class Probe:
    """Walks the tokens, measuring the steps of given windows: the first ``WINDOW`` steps of a
    window for lines executed, the next ``WINDOW`` for the largest allocation peak of a step
    (bytes above what was allocated before it)."""

    def __init__(self, masker: gg.Masker, windows: dict[str, int]):
        self.masker, self.windows = masker, windows
        self.lines = dict.fromkeys(windows, 0)
        self.peak = dict.fromkeys(windows, 0)

    def walk(self, tokens: list[int]) -> tuple[gg.State, int | None]:
        """The final state, and the most the resident set grew by (sampled every 1000 steps)."""
        state, i, grown, start = self.masker.initial_state(), 0, None, rss()
        starts = {first: w for w, first in self.windows.items()}
        while i < len(tokens):
            window = starts.get(i)
            if window is None:
                state, i = step(self.masker, state, tokens[i]), i + 1
            else:
                state = self._run_lines(window, state, tokens[i : i + WINDOW])
                state = self._run_peaks(window, state, tokens[i + WINDOW : i + 2 * WINDOW])
                i += 2 * WINDOW
            if start is not None and i % 1000 < (2 * WINDOW if window else 1):
                grown = max(grown or 0, rss() - start)
        return state, grown

    def _run_lines(self, window: str, state: gg.State, tokens: list[int]) -> gg.State:
        box = [state]

        def run() -> None:
            for tok in tokens:
                box[0] = step(self.masker, box[0], tok)

        self.lines[window] += lines_executed(run)
        return box[0]

    def _run_peaks(self, window: str, state: gg.State, tokens: list[int]) -> gg.State:
        tracemalloc.start()
        try:
            for tok in tokens:
                before = tracemalloc.get_traced_memory()[0]
                tracemalloc.reset_peak()
                state = step(self.masker, state, tok)
                self.peak[window] = max(self.peak[window], tracemalloc.get_traced_memory()[1] - before)
        finally:
            tracemalloc.stop()
        return state


def windows_of(name: str) -> dict[str, int]:
    """First steps of the windows at depth ~200 and ~DEPTH, of the same kind: opening, and
    closing where closing takes a step per level (the warm-up walk went 100 deep)."""
    if name == "items":  # "1" "," pairs: odd offsets are "1"
        return {"shallow": 201, "deep": DEPTH - 2 * WINDOW - 1}
    n = DEPTH if name == "json" else DEPTH // 2
    close = n if name == "json" else n + 1  # the indented walk puts an "a" between
    return {"shallow": 200, "deep": n - 2 * WINDOW, "deep_close": close, "shallow_close": close + n - 200 - 2 * WINDOW}


@pytest.mark.parametrize("name", list(CASES))
def test_a_walk_20000_deep_costs_per_step_what_a_shallow_one_does(name: str) -> None:
    masker, ids = compiled_case(name)
    state = masker.initial_state()
    for tok in walk_tokens(name, ids, 100):  # warm-up: views, splits (depth-independent work)
        state = step(masker, state, tok)
    assert state.finished
    probe = Probe(masker, windows_of(name))
    state, grown = probe.walk(walk_tokens(name, ids, DEPTH))
    assert state.finished
    assert min(probe.lines.values()) > 0 and min(probe.peak.values()) > 0
    for deep, shallow in (("deep", "shallow"), ("deep_close", "shallow_close")):
        if deep in probe.lines:
            assert probe.lines[deep] <= 2 * probe.lines[shallow] + 200 * WINDOW, (deep, probe.lines)
            assert probe.peak[deep] <= 2 * probe.peak[shallow] + (64 << 10), (deep, probe.peak)
    if grown is not None:
        assert grown < MEMORY_BOUND, f"the resident set grew by {grown / 2**20:.1f} MB at depth {DEPTH}"


def test_closing_a_right_recursive_list_replays_no_reductions_per_step() -> None:
    """The one step that closes it reduces depth-many times at most once; the others reduce a
    bounded number of times (counted on the goto table, one lookup per reduction)."""
    masker, ids = compiled_case("items")
    table = masker.parser
    counted = CountingRows(table._goto)
    table._goto = counted
    try:
        state, per_step = masker.initial_state(), []
        for tok in walk_tokens("items", ids, 4000):
            before = counted.lookups
            state = step(masker, state, tok)
            per_step.append(counted.lookups - before)
    finally:
        table._goto = counted.rows
    assert state.finished
    assert max(per_step[:-3]) <= 50, max(per_step[:-3])  # every step of the list itself
    assert sum(per_step) <= 50 * len(per_step)


class CountingRows(list):
    """The goto table's rows, counting lookups."""

    def __init__(self, rows: list) -> None:
        super().__init__(rows)
        self.rows, self.lookups = rows, 0

    def __getitem__(self, i):
        self.lookups += 1
        return list.__getitem__(self, i)


def test_equal_stacks_built_apart_are_equal_and_end_up_sharing_frames() -> None:
    def build(states, base=None):
        for s in states:
            base = Frame(s, base)
        return base

    root = Frame(0)
    a, b = build(range(1, 500), root), build(range(1, 500), root)
    c = build([*range(1, 499), 7], root)
    assert a is not b and hash(a) == hash(b) and a == b and len(a) == a.depth == 500
    assert a.parent is b.parent  # the walk re-linked b's frames onto a's: it is not made again
    assert a != c and a != build(range(1, 499), root) and a != (0, 1)
    assert a.states() == (0, *range(1, 500)) and {a: 1}[b] == 1
    lone = build(range(500))  # no shared root: equal all the way down
    assert lone == build(range(500)) and lone != build(range(1, 501))


def test_a_deep_state_pickles_and_compares_equal() -> None:
    masker, ids = compiled_case("items")
    state = masker.initial_state()
    for tok in walk_tokens("items", ids, 5000)[:-3]:
        state = masker.advance(state, tok)
    back = pickle.loads(pickle.dumps(state))
    assert back == state and back.stack.depth == state.stack.depth > 4000
    assert masker.mask(back).tobytes() == masker.mask(state).tobytes()


def test_indented_stacks_compare_by_value() -> None:
    masker, ids = compiled_case("indented")
    one, two = masker.initial_state(), masker.initial_state()
    for tok in (ids[b"f("], ids[b"f("], ids[b"a"], ids[b")"], ids[b")"]):  # the last ")" is still lexed
        one, two = masker.advance(one, tok), masker.advance(two, tok)
    assert isinstance(one.stack, IndentedStack) and one.stack.brackets == 1
    assert one == two and hash(one) == hash(two) and one.stack.lalr is not two.stack.lalr


def test_caches_stay_within_their_byte_bounds() -> None:
    masker, ids = compiled_case("json")
    small = gg.Masker(masker.compiled, cache_bytes=1 << 20)
    state = small.initial_state()
    for tok in walk_tokens("json", ids, 3000):
        state = step(small, state, tok)
    for name, cache in small.caches().items():
        assert cache.nbytes <= cache.budget or len(cache) == 1, name


def test_masks_charge_shared_words_once() -> None:
    """Many stacks share one status's words: the masks cache charges each words array once, and
    what it charges covers every array it holds (the bound is on real memory, not on entries)."""
    masker, ids = compiled_case("json")
    small = gg.Masker(masker.compiled, cache_bytes=1 << 20)
    state, peak = small.initial_state(), 0
    for tok in walk_tokens("json", ids, 3000):
        small.mask(state)
        masks = small.caches()["masks"]
        held = {id(w): w.nbytes for w in masks.values()}
        assert sum(held.values()) <= masks.nbytes <= masks.budget or len(masks) == 1
        if len(masks) > len(held):  # entries sharing words: charged less than a words array each
            assert masks.nbytes < sum(w.nbytes + small._stack_bytes(stack) for (_, stack), w in masks.items())
            peak = max(peak, len(masks) - len(held))
        state = step(small, state, tok)
    assert peak > 0, "no two stacks shared words: the walk does not test the sharing"


def test_put_shared_charges_a_part_once_per_generation() -> None:
    cache = BoundedCache(budget=1000)
    a, b = np.zeros(100, dtype=np.uint32), np.zeros(100, dtype=np.uint32)  # 400 bytes each

    def charge(part):
        return lambda held: 10 + held_bytes(held, part, part.nbytes)

    for k in range(3):
        assert cache.put_shared(("a", k), a, charge(a)) is a
    assert cache.nbytes == 430
    cache.put_shared("b", b, charge(b))
    assert cache.nbytes == 840 and len(cache) == 4
    assert cache.put_shared("b", a, charge(a)) is b and cache.nbytes == 840  # a key already in: kept, charged nothing
    c = np.zeros(100, dtype=np.uint32)
    cache.put_shared("c", c, charge(c))  # past the budget: starts over
    assert len(cache) == 1 and cache.nbytes == 410
    cache.put_shared(("a", 9), a, charge(a))  # a new generation charges ``a`` again
    assert cache.nbytes == 820


def test_put_charges_a_key_once() -> None:
    """Putting a key that is in keeps the value there and charges nothing (a cache of distinct
    values is put every value it meets: charging each put filled it with what it already held)."""
    cache = BoundedCache(budget=1000)
    assert cache.put("k", "first", 100) == "first"
    for _ in range(20):
        assert cache.put("k", "second", 100) == "first"
    assert cache.nbytes == 100 and len(cache) == 1


def test_lru_cache_lets_go_of_the_least_recently_used_one_at_a_time() -> None:
    """Lexer views cost ~1 ms each to build: past the budget the least recently used goes, not all."""
    cache = LruCache(budget=300)
    for k in "abc":
        cache.put(k, k.upper(), 100)
    assert cache.get("a") == "A"  # now the most recently used
    cache.put("d", "D", 100)
    assert sorted(cache) == ["a", "c", "d"] and cache.nbytes == 300
    cache.put("e", "E", 150)  # needs two to go: c, then a
    assert sorted(cache) == ["d", "e"] and cache.nbytes == 250
    assert cache.put("d", "other", 100) == "D" and cache.nbytes == 250  # a key already in: kept
    small = LruCache(budget=10**6, max_entries=2)
    for k in range(5):
        small.put(k, k, 1)
    assert sorted(small) == [3, 4]
    small.clear()
    assert not small and small.nbytes == 0 and small.put(9, 9, 1) == 9


def test_stack_frames_are_charged_once_per_generation() -> None:
    """Stacks that share frames are charged each frame once; the frames below a charged one are
    not walked again; a new generation (an empty held) charges them all."""
    bottom = None
    for state in range(10):
        bottom = Frame(state, bottom)
    a, b = Frame(100, bottom), Frame(101, Frame(102, bottom))
    held: dict = {}
    assert frames_bytes(a, held) == 11 * FRAME_BYTES
    assert frames_bytes(b, held) == 2 * FRAME_BYTES  # its two own frames; the ten below are held
    assert frames_bytes(a, held) == 0
    assert frames_bytes(b) == 12 * FRAME_BYTES == frames_bytes(b, {})
    deep = bottom
    for state in range(HELD_WALK + 50):
        deep = Frame(state, deep)
    held = {}
    assert frames_bytes(deep, held) == deep.depth * FRAME_BYTES and len(held) == HELD_WALK + 1  # a bounded walk
    assert frames_bytes(Frame(7, deep), held) == FRAME_BYTES


@pytest.mark.parametrize(
    "value, error, message",
    [(1 << 10, ValueError, "cache_bytes must be >= 1 MiB"), ("big", TypeError, "cache_bytes must be an int"),
     (True, TypeError, "cache_bytes must be an int")],
)
def test_cache_bytes_is_checked(value, error, message) -> None:
    masker, _ = compiled_case("items")
    with pytest.raises(error, match=message):
        gg.Masker(masker.compiled, cache_bytes=value)
