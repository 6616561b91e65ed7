"""Where MaskWorkers' time goes at B = 32 Go walks (issue 16): the work of each process, and whether the cores are shared.

Three measurements, each per run on the same B texts (eval/batch_scaling.py's setup and warm-up):

- ``split``: the pool as it runs (the caller and one worker take jobs from both ends): the jobs'
  compute time in the caller and in the worker, over the serial walk's time. More than 1: the
  processes compute more than one serial masker does (each one's caches learn only from its rows).
- ``worker-only``: the same with the caller taking no job (every job computed in the worker,
  whose caches then see every row, as serial's do): what a process's own overheads cost.
- ``contention``: two forks of one warmed process walk the same texts, one alone and then both at
  once: the slowdown of running together (1.0: the two cores are the machine's own).

    python -m eval.pool_work                    # about 4 minutes
    python -m eval.pool_work --runs 12 --update-results
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


def pool_work(compiled, walks, batch: int, steps: int, runs: int, warmup: int, caller_takes: bool) -> list[dict]:
    """Per run: the caller's and the worker's job seconds over the serial walk's, and the step ratio."""
    import greatgramma as gg
    from greatgramma.serving import MaskWorkers, mask_workers

    steal = mask_workers._Worker.steal
    if not caller_takes:
        mask_workers._Worker.steal = lambda self: None  # the caller takes no job: the worker computes them all
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
        mask_workers._Worker.steal = steal


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

    results, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    pids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:  # the child: touch, say ready, wait for the start, walk, report
            try:
                bs.walk(masker, touch, steps, gg.fill_next_token_bitmasks)
                os.write(ready_w, b"r")
                os.read(go_r, 1)
                t = time.perf_counter()
                bs.walk(masker, timed, steps, gg.fill_next_token_bitmasks)
                os.write(ready_w, f"{time.perf_counter() - t:.6f}\n".encode())
            finally:
                os._exit(0)
        pids.append(pid)
    os.close(ready_w)
    with os.fdopen(results) as f:
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
    for name, caller_takes in (("split", True), ("worker-only", False)):
        runs = pool_work(compiled, walks, args.batch, args.steps, args.runs, args.warmup, caller_takes)
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
    rows = [[name, m[name]["caller"], m[name]["worker"], m[name]["work"], m[name]["ratio"]] for name in ("split", "worker-only")]
    return "".join([
        f"# Where the pool's time goes, {data['date']}: B = {data['batch']} Go walks at llama3 (median of {data['runs']} runs)\n\n",
        f"{data['machine']}; MaskWorkers(1) beside the caller; {data['steps']} steps per run after a warm-up of "
        f"{data['warmup']} sequences. Caller, worker: the seconds each spent computing jobs, over the serial walk's "
        "seconds; work: their sum; step ratio: the pool's step time over serial's. `python -m eval.pool_work`.\n\n",
        markdown_table(["pool", "caller", "worker", "work", "step ratio"], rows, "lrrrr"),
        f"\nTwo forks of one warmed process walking the same texts at once, against one alone: "
        f"{m['contention']['slowdown']}x (median; largest {m['contention']['max']}x).\n",
    ])  # fmt: skip


if __name__ == "__main__":
    main()
