"""What two processes' caches learn against one's (issue 16): B = 32 Go walks, simulated in one process.

Each simulated process is a ``Masker`` of its own over its own copies of the parser stacks (made as
``MaskWorkers`` makes a worker's: frames sent and rebuilt, so no memo on a caller's frame is
shared), and every cache and memo is unbounded, so nothing is learned twice for want of room. Per
policy, the insertions into each cache (what was learned) and the seconds spent computing masks,
summed over the processes, against one serial masker (also unbounded) on the same walks:

- ``one``: a single simulated process (what the simulation itself costs);
- ``kept``: row i always computed by process i % 2 (each sequence stays in its process);
- ``moved``: the same with each row computed by the other process with probability 0.3.

    python -m eval.pool_learning                   # about 3 minutes
    python -m eval.pool_learning --update-results  # rewrites eval/pool_learning.json and .md
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import os
import platform
import random
import time

from eval import batch_scaling as bs
from eval.paths import ROOT, markdown_table, write_results

RESULTS = ROOT / "eval" / "pool_learning.json"
POLICIES = ("one", "kept", "moved")


def unbounded(masker) -> dict:
    """The masker's caches and its parser's memos, by name, each made unbounded."""
    lalr = getattr(masker.parser, "table", masker.parser)  # under a postlexer
    caches = {**masker.caches(), "segments": lalr._segments, "units": lalr._units}
    for cache in caches.values():
        cache.budget = cache.max_entries = 1 << 62
    return caches


class Process:
    """A simulated worker: its own masker over its own frames."""

    def __init__(self, compiled) -> None:
        import greatgramma as gg
        from greatgramma.serving.mask_workers import _Frames, _SentFrames

        self.sent, self.frames, self.masker = _SentFrames(), _Frames(), gg.Masker(compiled)
        self.caches = unbounded(self.masker)
        self.seconds = 0.0

    def mask(self, matcher):
        from greatgramma.masker import State

        encoded = self.sent.encode(matcher.state.stack)
        start = time.perf_counter()
        stack = self.frames.decode(*encoded)
        words = self.masker._mask_words(State(matcher.state.lexer, stack, False, self.masker.compiled.identity))
        self.seconds += time.perf_counter() - start
        return words


class Simulation:
    """A fill function: each uncached row's mask computed by the process the policy names."""

    def __init__(self, compiled, policy: str) -> None:
        self.processes = [Process(compiled) for _ in range(1 if policy == "one" else 2)]
        self.policy, self.rng = policy, random.Random(1)

    def __call__(self, matchers, bitmask) -> None:
        from greatgramma.matcher import write_rows
        from greatgramma.serving.mask_workers import _sort_rows

        masks, live, twins = _sort_rows(matchers, list(range(len(matchers))))
        for i in live:
            k = i % len(self.processes)
            if self.policy == "moved" and self.rng.random() < 0.3:
                k = 1 - k
            masks[i] = self.processes[k].mask(matchers[i])
            matchers[i].masker._keep_mask(matchers[i].state, masks[i])
        for i, j in twins.items():
            masks[i] = masks[j]
        write_rows(bitmask, list(masks), list(masks.values()))


def counting(names: dict[int, str], counts: dict[str, int]):
    """Wraps the caches' insertions (BoundedCache's, and LruCache's own ``put``: the lexer views)
    so that each one into a cache of ``names`` is counted."""
    from greatgramma import cache

    originals = {(c, m): f for c in (cache.BoundedCache, cache.LruCache) for m, f in vars(c).items()
                 if m in ("put", "put_shared", "grew")}  # fmt: skip

    def wrap(original):
        def counted(self, *args):
            name = names.get(id(self))
            if name is not None:
                counts[name] = counts.get(name, 0) + 1
            return original(self, *args)

        return counted

    for (c, m), f in originals.items():
        setattr(c, m, wrap(f))
    return lambda: [setattr(c, m, f) for (c, m), f in originals.items()]


def main(argv: list[str] | None = None) -> None:
    import greatgramma as gg

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--warmup", type=int, default=384)
    ap.add_argument("--update-results", action="store_true")
    args = ap.parse_args(argv)
    compiled, walks, _ = bs.setup("go", "llama3", max(args.batch, args.warmup), args.steps)
    serial = gg.Masker(compiled)
    serial_caches = unbounded(serial)
    sims = {p: (gg.Masker(compiled), Simulation(compiled, p)) for p in POLICIES}
    bs.walk(serial, bs.windows(walks, args.warmup, 2 * args.steps, random.Random(3)), 2 * args.steps, gg.fill_next_token_bitmasks)
    for outer, sim in sims.values():
        bs.walk(outer, bs.windows(walks, args.warmup, 2 * args.steps, random.Random(3)), 2 * args.steps, sim)
    gc.collect()
    gc.freeze()
    names, counts = {}, {p: {} for p in ("serial", *POLICIES)}
    for name, c in serial_caches.items():
        names[id(c)] = ("serial", name)
    for p, (_, sim) in sims.items():
        for proc in sim.processes:
            proc.seconds = 0.0
            names.update((id(c), (p, name)) for name, c in proc.caches.items())
    flat: dict = {}
    restore = counting(names, flat)
    try:
        rng, serial_s = random.Random(7), 0.0
        for _ in range(args.runs):
            texts = bs.windows(walks, args.batch, args.steps, rng)
            serial_s += sum(bs.walk(serial, texts, args.steps, gg.fill_next_token_bitmasks))
            for outer, sim in sims.values():
                bs.walk(outer, texts, args.steps, sim)
    finally:
        restore()
    for (who, name), n in flat.items():
        counts[who][name] = counts[who].get(name, 0) + n
    work = {p: round(sum(proc.seconds for proc in sim.processes) / serial_s, 3) for p, (_, sim) in sims.items()}
    data = {
        "date": dt.date.today().isoformat(), "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "batch": args.batch, "steps": args.steps, "runs": args.runs, "warmup": args.warmup, "work": work, "learned": counts,
    }  # fmt: skip
    print(json.dumps({"work": work, "learned": counts}))
    print(f"wrote {write_results(RESULTS, args.update_results, data, table(data))}")


def table(data: dict) -> str:
    learned, cols = data["learned"], ("serial", *POLICIES)
    names = sorted({n for c in learned.values() for n in c})
    rows = [[n, *(learned[c].get(n, 0) for c in cols)] for n in names]
    rows.append(["**compute time / serial's**", "1.0", *(data["work"][p] for p in POLICIES)])
    return "".join([
        f"# What two processes' caches learn, {data['date']}: B = {data['batch']} Go walks at llama3, simulated in one process\n\n",
        f"{data['machine']}; {data['runs']} runs of {data['steps']} steps after a warm-up of {data['warmup']} sequences; "
        "every cache and memo unbounded. Insertions into each cache (summed over the simulated processes) while the "
        "same walks are masked by one serial masker and by each policy: one (a single simulated process), kept (row i "
        "in process i % 2), moved (the same, each row in the other process with probability 0.3). "
        "`python -m eval.pool_learning`.\n\n",
        markdown_table(["cache", *cols], rows, "l" + "r" * len(cols)),
    ])  # fmt: skip


if __name__ == "__main__":
    main()
