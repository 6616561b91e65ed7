"""How much of a serial batch step runs without the GIL, and what two threads sharing one masker get from it (issue 16).

Threads share one masker's caches (processes each learn their own: eval/pool_work.md), but
only the compiled loops (:mod:`greatgramma.native`, which release the GIL) run in parallel.
Per run, B matchers walk ``--steps`` tokens of real Go files or random JSON documents
(eval/batch_scaling.py's setup, warm-up and windows), three ways on the same texts, each with a
masker of its own (warmed alike, so that none finds what another walk of the texts cached):

- ``serial``: ``gg.fill_next_token_bitmasks`` (the step time);
- ``timed``: the same with every call into the compiled loops timed: ``free`` is the share of
  the step spent in them (the wrapper's own microseconds counted in, so the share is if anything
  too high), and ``ceiling`` the step two threads would take at best, ``1 - free / 2`` of serial
  (Amdahl: everything else holds the GIL);
- ``threads``: each step's rows in halves, one on a second thread, both on the one masker: the
  measured ratio to serial.

With ``--caches cold`` each run starts with a new masker (views built again: numpy work on
vocabulary-sized arrays that this counts as holding the GIL, though numpy lets it go in some loops).

    python -m eval.gil_share                        # go and json at llama3, B = 32, warm and cold
    python -m eval.gil_share --update-results       # rewrites eval/gil_share.json and .md
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import os
import platform
import random
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from eval import batch_scaling as bs
from eval.paths import ROOT, markdown_table, write_results

RESULTS = ROOT / "eval" / "gil_share.json"
MODES = ("serial", "timed", "threads")


class TimedLoops:
    """``native.ext`` with every call timed: ``seconds`` spent inside the compiled loops."""

    def __init__(self, ext) -> None:
        self._ext, self.seconds = ext, 0.0

    def __getattr__(self, name: str):
        loop = getattr(self._ext, name)

        def timed(*args):
            start = time.perf_counter()
            try:
                return loop(*args)
            finally:
                self.seconds += time.perf_counter() - start

        return timed


def measure(grammar: str, tokenizer: str, batch: int, steps: int, runs: int, warmup: int, cold: bool) -> dict:
    import greatgramma as gg
    from greatgramma import native

    if native.ext is None:
        raise SystemExit("the compiled loops are not built: python3 setup.py build_ext --inplace")
    compiled, walks, _ = bs.setup(grammar, tokenizer, max(batch, warmup), steps)
    maskers = {mode: gg.Masker(compiled) for mode in MODES}  # each mode's caches hold only what it met
    for masker in maskers.values():  # the same warm-up, serially: the same caches
        bs.walk(masker, bs.windows(walks, warmup, 2 * steps, random.Random(3)), 2 * steps, gg.fill_next_token_bitmasks)
    gc.collect()
    gc.freeze()
    loops, timed = native.ext, TimedLoops(native.ext)
    rng = random.Random(7)
    cells: dict[str, list[float]] = {"serial": [], "timed": [], "free": [], "threads": []}
    with ThreadPoolExecutor(1) as helper:

        def two_threads(matchers, bitmask):
            half = len(matchers) // 2
            other = helper.submit(gg.fill_next_token_bitmasks, matchers[half:], bitmask[half:])
            gg.fill_next_token_bitmasks(matchers[:half], bitmask[:half])
            other.result()

        for _ in range(runs):
            texts = bs.windows(walks, batch, steps, rng)
            for mode in MODES:  # interleaved: a load change hits each alike
                if cold:
                    maskers[mode] = gg.Masker(compiled)
                fill = two_threads if mode == "threads" else gg.fill_next_token_bitmasks
                native.ext, timed.seconds = (timed if mode == "timed" else loops), 0.0
                try:
                    seconds = sum(bs.walk(maskers[mode], texts, steps, fill))
                finally:
                    native.ext = loops
                cells[mode].append(seconds / steps * 1e3)
                if mode == "timed":
                    cells["free"].append(timed.seconds / seconds)
    serial, free = statistics.median(cells["serial"]), statistics.median(cells["free"])
    result = {
        "grammar": grammar, "tokenizer": tokenizer, "caches": "cold" if cold else "warm", "batch": batch,
        "serial_ms": round(serial, 3), "free_share": round(free, 3), "ceiling_ratio": round(1 - free / 2, 3),
        "threads_ratio": round(statistics.median(t / s for t, s in zip(cells["threads"], cells["serial"])), 3),
    }  # fmt: skip
    print(json.dumps(result), flush=True)
    return result


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grammars", default="go,json")
    ap.add_argument("--tokenizer", default="llama3")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=384)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--caches", default="warm,cold")
    ap.add_argument("--update-results", action="store_true")
    args = ap.parse_args(argv)
    results = [
        measure(g, args.tokenizer, args.batch, args.steps, args.runs, args.warmup, caches == "cold")
        for g in args.grammars.split(",")
        for caches in args.caches.split(",")
    ]
    data = {
        "date": dt.date.today().isoformat(), "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "steps": args.steps, "runs": args.runs, "warmup": args.warmup, "results": results,
    }  # fmt: skip
    print(f"wrote {write_results(RESULTS, args.update_results, data, table(data))}")


def table(data: dict) -> str:
    cols = ["grammar", "caches", "B", "serial ms", "share without the GIL", "2-thread ceiling", "2 threads measured"]
    rows = [
        [r["grammar"], r["caches"], r["batch"], r["serial_ms"], r["free_share"], r["ceiling_ratio"], r["threads_ratio"]]
        for r in data["results"]
    ]
    return (
        f"# What runs without the GIL, {data['date']}: a serial batch step, and two threads on one masker\n\n"
        f"{data['machine']}; {data['steps']} steps per run after a warm-up of {data['warmup']} sequences, median of "
        f"{data['runs']} runs. Share: time inside the compiled loops over the step. Ceiling: the best two threads "
        "could do, as a ratio to serial (1 - share / 2); measured: each step's rows in halves on two threads. "
        "`python -m eval.gil_share`.\n\n" + markdown_table(cols, rows, "llrrrrr")
    )


if __name__ == "__main__":
    main()
