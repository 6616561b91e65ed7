"""Where MaskWorkers' time goes at B = 32 Go walks (issue 16): the work of each process, and whether the cores are shared.

Measurements, each per run on the same B texts (eval/batch_scaling.py's setup and warm-up):

- ``split``: the pool as it runs (the caller and one worker take jobs from both ends): the jobs'
  compute time in the caller and in the worker, over the serial walk's time. More than 1: the
  processes compute more than one serial masker does (each one's caches learn only from its rows).
- ``worker-only``: the same with the caller taking no job (every job computed in the worker,
  whose caches then see every row, as serial's do): what a process's own overheads cost.
- ``fixed``: row i always computed in process i % 2, nothing taken from the other's list (no
  balancing); ``fixed, 3 moved``: the same with 3 random rows of each step computed in the other
  process: what a sequence's mask computed away from the process that computed its last one costs.
- ``contention``: two forks of one warmed process walk the same texts, one alone and then both at
  once: the slowdown of running together (1.0: the two cores are the machine's own).

    python -m eval.pool_work                    # about 4 minutes (8 runs)
    python -m eval.pool_work --runs 16 --update-results   # about 5 minutes
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

from eval import batch_scaling as bs
from eval.paths import ROOT, markdown_table, write_results

RESULTS = ROOT / "eval" / "pool_work.json"
POOLS = ("split", "worker-only", "fixed", "fixed, 3 moved")


def pool_work(compiled, walks, batch: int, steps: int, runs: int, warmup: int, mode: str) -> list[dict]:
    """Per run: the caller's and the worker's job seconds over the serial walk's, and the step ratio."""
    import greatgramma as gg
    from greatgramma.serving import MaskWorkers, mask_workers

    steal, spread = mask_workers._Worker.steal, MaskWorkers._spread
    if mode == "worker-only":
        mask_workers._Worker.steal = lambda self: None  # the caller takes no job: the worker computes them all
    elif mode.startswith("fixed"):
        MaskWorkers._spread = _fixed_spread(3 if "moved" in mode else 0)
    try:
        serial, pooled = gg.Masker(compiled), gg.Masker(compiled)
        with MaskWorkers(1, min_batch=1, min_seconds=0.0) as pool:
            pool.wait()

            def through(matchers, bitmask):
                gg.fill_next_token_bitmasks(matchers, bitmask, workers=pool)

            for masker, fill in ((serial, gg.fill_next_token_bitmasks), (pooled, through)):
                bs.walk(masker, bs.windows(walks, warmup, 2 * steps, random.Random(3)), 2 * steps, fill)
            gc.collect()
            gc.freeze()
            rng, out = random.Random(7), []
            for _ in range(runs):
                texts = bs.windows(walks, batch, steps, rng)
                serial_s = sum(bs.walk(serial, texts, steps, gg.fill_next_token_bitmasks))
                here, there = pool.seconds_here, pool.seconds_in_workers
                pool_s = sum(bs.walk(pooled, texts, steps, through))
                out.append({"caller": (pool.seconds_here - here) / serial_s, "worker": (pool.seconds_in_workers - there) / serial_s,
                            "ratio": pool_s / serial_s})  # fmt: skip
            return out
    finally:
        mask_workers._Worker.steal, MaskWorkers._spread = steal, spread


def _fixed_spread(moved: int):
    """A ``MaskWorkers._spread`` for one worker: rows i % 2 == 1 to the worker, the rest computed
    in the caller, nothing taken from the other's list; ``moved`` random rows swap sides."""
    from greatgramma.serving import mask_workers

    rng = random.Random(5)

    def spread(pool, matchers, live, masks) -> None:
        swap = set(rng.sample(live, min(moved, len(live))))
        theirs = [i for i in live if (i % 2 == 1) != (i in swap)]
        mine = [i for i in live if (i % 2 == 0) != (i in swap)]
        worker = pool._workers[0]
        if not (theirs and worker.ready() and worker.ask(pool, [matchers[i] for i in theirs])):
            mine, theirs = mine + theirs, []
        start = time.perf_counter()
        masks.update(zip(mine, pool._masks_here(matchers, mine)))
        pool.seconds_here += time.perf_counter() - start
        if theirs:
            _, words, seconds = worker.answer()
            pool.seconds_in_workers += seconds
            mask_workers._take_answers(matchers, theirs, words, masks)  # as MaskWorkers._spread does

    return spread


def contention(compiled, walks, batch: int, steps: int, runs: int, warmup: int) -> list[float]:
    """Per run: the mean time of two forks walking the same new texts at once, over one fork's alone."""
    import greatgramma as gg

    masker = gg.Masker(compiled)
    bs.walk(masker, bs.windows(walks, warmup, 2 * steps, random.Random(3)), 2 * steps, gg.fill_next_token_bitmasks)
    gc.collect()
    gc.freeze()
    rng, out = random.Random(11), []
    for _ in range(runs):
        timed, touch = bs.windows(walks, batch, steps, rng), bs.windows(walks, batch, steps, rng)
        alone = _forked(masker, timed, touch, steps, 1)
        both = _forked(masker, timed, touch, steps, 2)
        alone += _forked(masker, timed, touch, steps, 1)
        out.append(statistics.mean(both) / statistics.mean(alone))
    return out


def _forked(masker, timed, touch, steps: int, n: int) -> list[float]:
    """Seconds of ``n`` forks walking ``timed`` at once (each first walks ``touch``, untimed: its
    copy-on-write pages are copied before the clock starts)."""
    import greatgramma as gg

    from_children, to_parent = os.pipe()  # each child's "ready", then its seconds
    go_r, go_w = os.pipe()
    pids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:  # the child: touch, say ready, wait for the start, walk, report
            try:
                bs.walk(masker, touch, steps, gg.fill_next_token_bitmasks)
                os.write(to_parent, b"r")
                os.read(go_r, 1)
                t = time.perf_counter()
                bs.walk(masker, timed, steps, gg.fill_next_token_bitmasks)
                os.write(to_parent, f"{time.perf_counter() - t:.6f}\n".encode())
            finally:
                os._exit(0)
        pids.append(pid)
    os.close(to_parent)
    with os.fdopen(from_children) as f:
        f.read(n)  # every child is ready
        os.write(go_w, b"g" * n)
        seconds = [float(f.readline()) for _ in range(n)]
    for pid in pids:
        os.waitpid(pid, 0)
    os.close(go_r)
    os.close(go_w)
    return seconds


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=384)
    ap.add_argument("--update-results", action="store_true")
    args = ap.parse_args(argv)
    compiled, walks, _ = bs.setup("go", "llama3", max(args.batch, args.warmup), args.steps)
    measures = {}
    for name in POOLS:
        runs = pool_work(compiled, walks, args.batch, args.steps, args.runs, args.warmup, name)
        measures[name] = {k: round(statistics.median(r[k] for r in runs), 3) for k in ("caller", "worker", "ratio")}
        measures[name]["work"] = round(statistics.median(r["caller"] + r["worker"] for r in runs), 3)
        print(json.dumps({name: measures[name]}), flush=True)
    slowdowns = contention(compiled, walks, args.batch, args.steps, args.runs, args.warmup)
    measures["contention"] = {"slowdown": round(statistics.median(slowdowns), 3), "max": round(max(slowdowns), 3)}
    print(json.dumps({"contention": measures["contention"]}), flush=True)
    data = {
        "date": dt.date.today().isoformat(), "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "batch": args.batch, "steps": args.steps, "runs": args.runs, "warmup": args.warmup, "measures": measures,
    }  # fmt: skip
    print(f"wrote {write_results(RESULTS, args.update_results, data, table(data))}")


def table(data: dict) -> str:
    m = data["measures"]
    rows = [[name, m[name]["caller"], m[name]["worker"], m[name]["work"], m[name]["ratio"]] for name in POOLS if name in m]
    return "".join([
        f"# Where the pool's time goes, {data['date']}: B = {data['batch']} Go walks at llama3 (median of {data['runs']} runs)\n\n",
        f"{data['machine']}; MaskWorkers(1) beside the caller; {data['steps']} steps per run after a warm-up of "
        f"{data['warmup']} sequences. Caller, worker: the seconds each spent computing jobs, over the serial walk's "
        "seconds; work: their sum; step ratio: the pool's step time over serial's. `python -m eval.pool_work`. "
        "One invocation: on 2026-12-07 invocations of the same command differed by up to 0.25 in work and 0.2 in "
        "step ratio.\n\n",
        markdown_table(["pool", "caller", "worker", "work", "step ratio"], rows, "lrrrr"),
        f"\nTwo forks of one warmed process walking the same texts at once, against one alone: "
        f"{m['contention']['slowdown']}x (median; largest {m['contention']['max']}x).\n",
    ])  # fmt: skip


if __name__ == "__main__":
    main()
